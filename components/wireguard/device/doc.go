// Package device holds every side effect semaphore-wireguard has on its host: WireGuard
// devices, their keys and peers, and the routes that send remote pod CIDRs through them.
//
// The controller computes what it wants (pure code, elsewhere) and calls a [Manager] to
// make the host match. Each Manager method is a narrow, idempotent step: [Manager.Ensure]
// touches nothing that is already right, [Manager.ConfigurePeers] applies only the peer
// changes it is given (never ReplacePeers, which would reset every session), and
// [Manager.SyncRoutes] only ever lists and deletes routes carrying [RouteProtocol] on the
// device, so routes installed by anyone else are never touched. [Manager.SetMTU] changes a
// device's MTU in place; [Manager.PathMTU] and [Manager.DefaultPathMTU] read the MTU of the
// underlay routes it is derived from.
//
// # Kernel and userspace devices
//
// A Manager drives either kernel WireGuard (a netlink link of type "wireguard") or an
// embedded wireguard-go device (a TUN link plus a UAPI socket in /var/run/wireguard that
// this process serves). Both are configured the same way, through wgctrl, so the `wg`
// tool works against either.
//
// Lifetimes differ, by design:
//   - Kernel devices belong to the kernel. They survive a controller restart, and
//     [Manager.Close] leaves them alone, so traffic keeps flowing while the controller is
//     down and an in-sync device is not even reconfigured when it comes back.
//   - A userspace device's WireGuard state (key, peers, sessions) lives in the process
//     that runs it, but its TUN link is persistent and marked as ours (its ifalias): when
//     the process exits (or [Manager.Close] is called) the link stays, with its addresses
//     and routes, and drops what is routed to it; the next start takes the same link back,
//     its routes untouched, and configures it again. Traffic to remote pods is held back
//     for the restart (TCP retransmits) rather than refused as unreachable, and peers
//     handshake again at the first packet or keepalive.
//
// # Naming
//
// The package does not invent device names; the controller passes them in (at most 15
// bytes, Linux's limit) and lists its own devices with [Manager.Devices] and a name
// prefix it owns.
package device
