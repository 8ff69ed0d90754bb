package version

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// A program's Build is Version, the Go version and platform it runs as, and the commit and
// whether the work tree was modified when the Go toolchain stamped them; String puts it on one
// line.
func TestBuildSaysTheVersionGoPlatformAndCommit(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	plain := fromBuildInfo(nil)
	if want := (Build{Version: Version, GoVersion: runtime.Version(), Platform: platform}); plain != want {
		t.Errorf("without build info: %+v, want %+v", plain, want)
	}
	if got, want := plain.String(), Version+" ("+runtime.Version()+", "+platform+")"; got != want {
		t.Errorf("String: %q, want %q", got, want)
	}

	stamped := fromBuildInfo(&debug.BuildInfo{Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123abc"}, {Key: "vcs.modified", Value: "true"},
	}})
	if stamped.Revision != "0123abc" || !stamped.Modified {
		t.Errorf("stamped: %+v, want revision 0123abc, modified", stamped)
	}
	if got, want := stamped.String(), Version+" ("+runtime.Version()+", "+platform+", revision 0123abc, modified)"; got != want {
		t.Errorf("String: %q, want %q", got, want)
	}
	clean := fromBuildInfo(&debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abc"}, {Key: "vcs.modified", Value: "false"}}})
	if clean.Modified || clean.String() != Version+" ("+runtime.Version()+", "+platform+", revision 0123abc)" {
		t.Errorf("clean: %+v %q", clean, clean.String())
	}
}
