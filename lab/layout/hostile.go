package layout

// The hostile remote (lab/scenarios): merit turns hostile towards gcp. What the environment
// sets up for it is the limit it goes over; the status shows the scenario's objects while they
// exist, by these names.
const (
	HostileRemote   = "merit"
	HostileConsumer = "gcp"
	// HostileNamespace holds the hostile Services, EndpointSlices and pods in the remote.
	HostileNamespace = "hostile"
	// HostileLabel marks every object of the scenario (value "true"), so that the status finds
	// them and the cleanup deletes exactly them.
	HostileLabel = "lab.semaphore.uw.io/hostile"
	// HostileMirrorCap is serviceMirror.maxServicesPerRemote in the lab's values: small, so that
	// the scenario goes over it with a few dozen Services.
	HostileMirrorCap = 30
)
