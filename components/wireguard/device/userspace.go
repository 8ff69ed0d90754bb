package device

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/conn"
	wgdevice "golang.zx2c4.com/wireguard/device"
	"golang.zx2c4.com/wireguard/ipc"
	"golang.zx2c4.com/wireguard/tun"
)

// socketDir is where wireguard-go (and so wgctrl and wg(8)) keep UAPI sockets. It is
// fixed by the ipc package; we only need it to clean up stale sockets.
const socketDir = "/var/run/wireguard"

// userspaceAlias marks the TUN links of our userspace devices (the link's ifalias). The links
// are persistent: they outlive the process that made them, with their routes, so that a
// restarted controller (a rollout, an upgrade) takes its device back instead of making a new
// one, and traffic to remote pods meanwhile waits (TCP retransmits) instead of failing with
// "network is unreachable". Only a link carrying the mark is taken back or deleted when no
// process of ours serves it.
const userspaceAlias = "semaphore-wireguard userspace"

// ErrBusy is the error of Ensure when another process still serves the persistent link of a
// userspace device: a previous agent that has not stopped yet. The device can be taken back once
// it has.
var ErrBusy = errors.New("another process serves the device")

// userspaceDevice is one wireguard-go device run by this process, with the UAPI socket
// through which wgctrl configures it.
type userspaceDevice struct {
	name string
	log  *slog.Logger
	dev  *wgdevice.Device

	uapi     net.Listener
	done     chan struct{} // closed when the accept loop of uapi ends
	stopping atomic.Bool   // set while we close uapi ourselves, to keep that quiet
}

// startUserspace runs a wireguard-go device on the TUN link name, serving its UAPI socket: it
// creates the link (persistent, marked as ours, down; the caller configures and raises it),
// or attaches to the persistent link a previous process of ours left, which keeps its
// state, addresses and routes.
func startUserspace(name string, mtu int, log *slog.Logger) (*userspaceDevice, error) {
	tunDev, err := tun.CreateTUN(name, mtu)
	if err != nil {
		if errors.Is(err, unix.EBUSY) {
			return nil, fmt.Errorf("attach to TUN device: %w (%w)", ErrBusy, err)
		}
		return nil, fmt.Errorf("create TUN device: %w", err)
	}
	if err := checkTUN(tunDev, name); err != nil {
		_ = tunDev.Close()
		return nil, err
	}
	ud := &userspaceDevice{
		name: name,
		log:  log,
		dev:  wgdevice.NewDevice(tunDev, conn.NewDefaultBind(), wireguardGoLogger(log)),
	}
	if err := ud.serve(); err != nil {
		ud.dev.Close() // the link stays: it is persistent, and may be a previous process's
		return nil, err
	}
	return ud, nil
}

// checkTUN makes sure tunDev is the link called name and makes that link persistent.
func checkTUN(tunDev tun.Device, name string) error {
	if got, err := tunDev.Name(); err != nil || got != name {
		if err != nil {
			return fmt.Errorf("create TUN device: reading its name: %w", err)
		}
		return fmt.Errorf("create TUN device: got name %q, want %q", got, name)
	}
	raw, err := tunDev.File().SyscallConn()
	if err != nil {
		return fmt.Errorf("make TUN device persistent: %w", err)
	}
	// Control, not Fd: Fd would switch the file to blocking mode under wireguard-go's reads.
	var ioctlErr error
	if err := raw.Control(func(fd uintptr) { ioctlErr = unix.IoctlSetInt(int(fd), unix.TUNSETPERSIST, 1) }); err != nil {
		return fmt.Errorf("make TUN device persistent: %w", err)
	}
	if ioctlErr != nil {
		return fmt.Errorf("make TUN device persistent: %w", ioctlErr)
	}
	return nil
}

// ownedUserspaceLink reports whether link is the TUN link of one of our userspace devices,
// whichever process made it.
func ownedUserspaceLink(link netlink.Link) bool {
	return link.Type() == "tuntap" && link.Attrs().Alias == userspaceAlias
}

// serve opens the UAPI socket and accepts configuration connections until the listener
// is closed or the socket file is removed (wireguard-go watches it with inotify).
// ipc.UAPIOpen already replaces a stale socket left by a dead process; a socket that
// still answers belongs to someone else and is an error.
func (ud *userspaceDevice) serve() error {
	ud.stopServing()
	file, err := ipc.UAPIOpen(ud.name)
	if err != nil {
		return fmt.Errorf("open UAPI socket %s (served by another process, e.g. another network namespace sharing %s?): %w",
			socketPath(ud.name), socketDir, err)
	}
	l, err := ipc.UAPIListen(ud.name, file)
	file.Close() // the listener holds its own copy of the descriptor
	if err != nil {
		return fmt.Errorf("listen on UAPI socket %s: %w", socketPath(ud.name), err)
	}
	done := make(chan struct{})
	ud.uapi, ud.done = l, done
	ud.stopping.Store(false)
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				if !ud.stopping.Load() {
					ud.log.Warn("UAPI socket stopped accepting, device unconfigurable until the next Ensure", "err", err)
				}
				return
			}
			go ud.dev.IpcHandle(c)
		}
	}()
	return nil
}

// serving reports whether the UAPI accept loop still runs.
func (ud *userspaceDevice) serving() bool {
	select {
	case <-ud.done:
		return false
	default:
		return true
	}
}

// close stops serving the socket (removing the file) and closes the device. Its TUN link
// stays, with its routes, until deleted: traffic routed to it is dropped until a process
// attaches to it again.
func (ud *userspaceDevice) close() {
	ud.stopServing()
	ud.dev.Close()
}

// stopServing closes the UAPI listener, if any, and waits for its accept loop to end.
func (ud *userspaceDevice) stopServing() {
	if ud.uapi == nil {
		return
	}
	ud.stopping.Store(true)
	ud.uapi.Close()
	<-ud.done
	ud.uapi = nil
}

func socketPath(name string) string { return filepath.Join(socketDir, name+".sock") }

// removeStaleSocket removes the UAPI socket of name when nothing answers on it any more
// (its process died). A socket that answers is left alone: it is somebody's device.
func removeStaleSocket(name string, log *slog.Logger) {
	path := socketPath(name)
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&os.ModeSocket == 0 {
		return
	}
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		return
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		log.Warn("removing stale UAPI socket failed", "device", name, "err", err)
		return
	}
	log.Info("stale UAPI socket removed", "device", name)
}

// wireguardGoLogger routes wireguard-go's printf-style logging into slog: its verbose
// lines at debug level, its errors (mostly transient: unreachable peers, failed
// handshakes) at warn level.
func wireguardGoLogger(log *slog.Logger) *wgdevice.Logger {
	return &wgdevice.Logger{
		Verbosef: func(format string, args ...any) {
			if !log.Enabled(context.Background(), slog.LevelDebug) {
				return
			}
			log.Debug("wireguard-go", "detail", fmt.Sprintf(format, args...))
		},
		Errorf: func(format string, args ...any) {
			log.Warn("wireguard-go error", "detail", fmt.Sprintf(format, args...))
		},
	}
}
