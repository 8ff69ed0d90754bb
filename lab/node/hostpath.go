package node

// HostPath is where path, one of the directories a node has to itself (/var/log/pods, a
// PrivateDirs entry, ...), is on this machine for the node whose Config.Dir is dir: how the
// lab reads what the kubelet wrote, such as a pod's log.
func HostPath(dir, path string) string {
	return paths{dir}.root(path)
}
