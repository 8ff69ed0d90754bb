package signing

// What the tests compare with the signature image cosign writes.
var (
	NoSignatures  = noSignatures
	WithSignature = withSignature
)
