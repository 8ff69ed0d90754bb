package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/kube-semaphore/semaphore/internal/tooling/dist"
	"github.com/kube-semaphore/semaphore/internal/tooling/images"
	"github.com/kube-semaphore/semaphore/internal/tooling/signing"
)

// plan is a release as the flags and the tree say it: its version, where it goes, the notes.
type plan struct {
	config
	root  string
	epoch time.Time
	notes string
	key   *ecdsa.PrivateKey
	// filled in by the steps
	archives, charts, sboms []dist.Artifact
	sums                    map[string]string
}

// semverRE is a release version: v, then SemVer without build metadata (charts forbid none, but
// image tags cannot carry a +).
var semverRE = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)

// plan checks what a release needs before anything is built: a version, a clean tree and no
// tag of it yet (unless a snapshot), the version's notes in CHANGELOG.md, an empty -dist.
func (c config) plan(ctx context.Context) (*plan, error) {
	root, err := dist.ModuleRoot(ctx)
	if err != nil {
		return nil, err
	}
	p := &plan{config: c, root: root}
	section := dist.Unreleased
	if c.snapshot {
		if p.version == "" {
			if p.version, err = dist.SnapshotVersion(ctx, root, "snapshot"); err != nil {
				return nil, err
			}
		}
	} else {
		section = dist.ChartVersion(c.version)
		if err := p.releasable(ctx); err != nil {
			return nil, err
		}
	}
	if !semverRE.MatchString(p.version) {
		return nil, fmt.Errorf("-version %q: not vMAJOR.MINOR.PATCH[-PRERELEASE]", p.version)
	}
	changelog, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		return nil, err
	}
	if p.notes, err = dist.ReleaseNotes(string(changelog), section); err != nil {
		return nil, err
	}
	if p.epoch, err = images.SourceDateEpoch(ctx, root); err != nil {
		return nil, err
	}
	if p.key, err = p.releaseKey(); err != nil {
		return nil, err
	}
	if p.downloadURL == "" {
		p.downloadURL = dist.DownloadURL(p.version)
	}
	return p, p.makeDist()
}

// releasable checks that a release of the version may be made from the tree.
func (p *plan) releasable(ctx context.Context) error {
	if p.version == "" {
		return errors.New("-version: a release needs one (vX.Y.Z); -snapshot builds without")
	}
	status, err := git(ctx, p.root, "status", "--porcelain")
	if err != nil {
		return err
	}
	if status != "" {
		return fmt.Errorf("the tree is not clean (git status):\n%s", status)
	}
	if _, err := git(ctx, p.root, "rev-parse", "-q", "--verify", "refs/tags/"+p.version); err == nil {
		return fmt.Errorf("tag %s exists already", p.version)
	}
	return nil
}

// makeDist creates -dist, absolute, which must not hold anything yet: a release never mixes
// with the files of another.
func (p *plan) makeDist() error {
	abs, err := filepath.Abs(p.dist)
	if err != nil {
		return err
	}
	p.dist = abs
	if entries, err := os.ReadDir(abs); err == nil && len(entries) > 0 {
		return fmt.Errorf("-dist %s holds files already: remove them", abs)
	}
	return os.MkdirAll(abs, 0o755)
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...).Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

// releaseKey loads the key that signs the release. A release's must be the one whose public
// half the repository documents (docs/release-key.pub); a snapshot without one is signed by a
// key made for it, whose public half goes with it.
func (p *plan) releaseKey() (*ecdsa.PrivateKey, error) {
	if p.signingKey == "" {
		if !p.snapshot {
			return nil, errors.New("-signing-key: a release is signed by the release key (docs/releasing.md)")
		}
		return signing.GenerateKey()
	}
	key, err := signing.LoadPrivateKey(p.signingKey)
	if err != nil || p.snapshot {
		return key, err
	}
	documented, err := os.ReadFile(filepath.Join(p.root, "docs", dist.PublicKeyFile))
	if err != nil {
		return nil, fmt.Errorf("the release key's public half is not documented: %w (docs/releasing.md says how)", err)
	}
	public, err := signing.PublicKeyPEM(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(bytes.TrimSpace(public), bytes.TrimSpace(documented)) {
		return nil, fmt.Errorf("-signing-key %s is not the key of docs/%s", p.signingKey, dist.PublicKeyFile)
	}
	return key, nil
}
