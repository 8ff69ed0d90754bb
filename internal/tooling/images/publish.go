package images

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// refNameAnnotation names an image in an OCI layout's index.json.
const refNameAnnotation = "org.opencontainers.image.ref.name"

// WriteLayout writes images (reference -> index) as the OCI image layout dir: index.json lists
// one image index per reference, in reference order, annotated with its reference
// (org.opencontainers.image.ref.name), and blobs/ holds what they need. dir must be missing,
// empty or an OCI layout; an existing layout is replaced, its blobs kept when still needed (so
// rewriting an unchanged image writes nothing) and removed otherwise.
func WriteLayout(dir string, images map[string]v1.ImageIndex) error {
	if err := checkLayoutDir(dir); err != nil {
		return err
	}
	top := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var adds []mutate.IndexAddendum
	for _, ref := range slices.Sorted(maps.Keys(images)) {
		if _, err := name.ParseReference(ref); err != nil {
			return fmt.Errorf("image %q: %w", ref, err)
		}
		adds = append(adds, mutate.IndexAddendum{
			Add:        images[ref],
			Descriptor: v1.Descriptor{Annotations: map[string]string{refNameAnnotation: ref}},
		})
	}
	top = mutate.AppendManifests(top, adds...)
	if _, err := layout.Write(dir, top); err != nil {
		return fmt.Errorf("writing the OCI layout %s: %w", dir, err)
	}
	return removeUnusedBlobs(dir, top)
}

// checkLayoutDir refuses to write into a directory that holds something other than a layout.
func checkLayoutDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) || err == nil && len(entries) == 0 {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
		return fmt.Errorf("%s is neither empty nor an OCI image layout: not writing images into it", dir)
	}
	return nil
}

// removeUnusedBlobs removes the blobs of dir that top does not reach.
func removeUnusedBlobs(dir string, top v1.ImageIndex) error {
	keep := map[string]bool{}
	if err := reach(top, keep); err != nil {
		return err
	}
	blobs := filepath.Join(dir, "blobs")
	return filepath.WalkDir(blobs, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(blobs, p)
		if err != nil {
			return err
		}
		if !keep[strings.Replace(filepath.ToSlash(rel), "/", ":", 1)] {
			return os.Remove(p)
		}
		return nil
	})
}

// reach adds the digests of everything idx refers to (but not idx itself) to keep.
func reach(idx v1.ImageIndex, keep map[string]bool) error {
	im, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	for _, desc := range im.Manifests {
		keep[desc.Digest.String()] = true
		switch {
		case desc.MediaType.IsIndex():
			child, err := idx.ImageIndex(desc.Digest)
			if err != nil {
				return err
			}
			if err := reach(child, keep); err != nil {
				return err
			}
		case desc.MediaType.IsImage():
			img, err := idx.Image(desc.Digest)
			if err != nil {
				return err
			}
			m, err := img.Manifest()
			if err != nil {
				return err
			}
			keep[m.Config.Digest.String()] = true
			for _, l := range m.Layers {
				keep[l.Digest.String()] = true
			}
		}
	}
	return nil
}

// Push pushes idx, with all its images, to the registry as ref
// (registry.example.com/semaphore-policy:0.1.0), with the credentials of the Docker
// configuration (~/.docker/config.json) when it has some. insecure talks plain HTTP to the
// registry; a registry on localhost or a loopback address gets plain HTTP anyway.
func Push(ctx context.Context, ref string, idx v1.ImageIndex, insecure bool) error {
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	r, err := name.ParseReference(ref, opts...)
	if err != nil {
		return err
	}
	if err := remote.WriteIndex(r, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return fmt.Errorf("pushing %s: %w", ref, err)
	}
	return nil
}
