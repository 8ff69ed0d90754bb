package layout

// ClusterIDs are the IDs the lab's clusters say in their ClusterProperty cluster.clusterset.k8s.io
// (the About API), as a clusterset's tooling would set them: merit has one, aws and gcp have none
// and are known by their names. The imported endpoints of the Multi-Cluster Services API carry
// the ID as their source cluster.
var ClusterIDs = map[string]string{"merit": "merit-onprem-1"}

// ClusterID is the ID of cluster in the clusterset: its ClusterProperty's, else its name.
func ClusterID(cluster string) string {
	if id, ok := ClusterIDs[cluster]; ok {
		return id
	}
	return cluster
}
