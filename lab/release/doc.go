// Package release is the release the lab installs, built as users get one: by the code `make
// release` runs (internal/tooling/dist), with a version of its own (v0.0.0-lab.g<commit>): the
// images tagged with it and installed by that tag and the digest of the index the lab pushed
// (images.go), both charts packaged with it and installed from the registry by that version,
// and kubectl-semaphore installed by krew from the release's archive for this machine, checked
// against the release's krew manifest (plugin.go). As `make release SNAPSHOT=1` does, the lab
// signs it with a key made for it and writes the SBOMs (sign.go), and then verifies it offline
// as docs/verifying.md has users do, with cosign itself (verify.go). It also builds the
// previous release, which the lab upgrades from (previous.go).
//
// It is apart from lab/env, which brings the lab up, because it needs nothing of a running
// lab but a directory and a registry: a Builder is its inputs (the release directory, the
// version, the registry, the platform, a log) and what it made (the signed files, the signed
// images, the SBOMs), and lab/env calls it from its parts. What needs the clusters or helm
// (the pods' images, helm upgrade) stays a thin part of lab/env that calls into it.
package release
