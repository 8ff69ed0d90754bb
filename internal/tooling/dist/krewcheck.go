package dist

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ValidateKrewManifest checks the krew manifest at manifest with krew's own tools, found in
// krewDir (ci/krew.sh builds them): validate-krew-manifest's checks of the manifest and its
// platforms, then for every archive in dir `krew install --manifest --archive`, krew's offline
// install, as a user of that platform would run it (KREW_OS, KREW_ARCH), into a krew root of
// its own; the plugin's binary must then be installed.
func ValidateKrewManifest(ctx context.Context, krewDir, manifest, dir string, archives []Artifact) error {
	validate := exec.CommandContext(ctx, filepath.Join(krewDir, "validate-krew-manifest"), "-manifest", manifest, "-skip-install")
	if out, err := validate.CombinedOutput(); err != nil {
		return fmt.Errorf("validate-krew-manifest: %w\n%s", err, out)
	}
	for _, a := range archives {
		if err := krewInstall(ctx, krewDir, manifest, filepath.Join(dir, a.Name), a.Platform); err != nil {
			return err
		}
	}
	return nil
}

// krewInstall installs the plugin from archive as krew does on platform, into a throwaway krew
// root, and checks that its binary is there.
func krewInstall(ctx context.Context, krewDir, manifest, archive, platform string) error {
	root, err := os.MkdirTemp("", "semaphore-krew-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	return KrewInstall(ctx, krewDir, root, manifest, archive, platform)
}

// KrewInstall installs the plugin of manifest from archive with `krew install --manifest
// --archive`, as a user of platform does, into the krew root krewRoot, and checks that its
// binary is in krewRoot/bin.
func KrewInstall(ctx context.Context, krewDir, krewRoot, manifest, archive, platform string) error {
	goos, arch, _ := strings.Cut(platform, "/")
	install := exec.CommandContext(ctx, filepath.Join(krewDir, "krew"), "install", "--manifest", manifest, "--archive", archive)
	install.Env = append(os.Environ(), "KREW_ROOT="+krewRoot, "KREW_OS="+goos, "KREW_ARCH="+arch)
	if out, err := install.CombinedOutput(); err != nil {
		return fmt.Errorf("krew install --archive %s (%s): %w\n%s", filepath.Base(archive), platform, err, out)
	}
	bin := "kubectl-semaphore"
	if goos == "windows" {
		bin += ".exe"
	}
	if _, err := os.Lstat(filepath.Join(krewRoot, "bin", bin)); err != nil {
		return fmt.Errorf("krew install --archive %s (%s): no %s in its bin: %w", filepath.Base(archive), platform, bin, err)
	}
	return nil
}
