package testbed

import "net"

// FreeAddr returns a loopback address (127.0.0.1:port) whose TCP port was free at the time of
// the call, for a process that must be told where to listen.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
