package main

import (
	"path/filepath"
	"testing"

	"github.com/kube-semaphore/semaphore/internal/testbed"
	"github.com/kube-semaphore/semaphore/test/charts"
)

// The lab follows semaphore-remote's NOTES as printed: for every consumer they name the token
// Secret, the Secret to copy it to and a global.remotes entry that, with the CA filled in, is
// one entry for this cluster with the copied token.
func TestNotesOfSemaphoreRemote(t *testing.T) {
	rel, err := charts.Render(filepath.Join(testbed.RepoRoot(), charts.RemoteDir), remoteRelease, remoteNamespace, map[string]any{
		"clusterName": "aws",
		"apiServer":   "https://127.0.0.1:6443",
		// As the lab installs it in the Calico-way cluster.
		"consumers": []any{map[string]any{"name": "gcp", "calicoIPAM": true}, map[string]any{"name": "merit", "calicoIPAM": true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, consumer := range []string{"gcp", "merit"} {
		steps, err := parseNotes(rel.Info.Notes, consumer)
		if err != nil {
			t.Fatalf("%s: %v", consumer, err)
		}
		want := notesSteps{TokenNamespace: remoteNamespace, TokenSecret: "semaphore-remote-" + consumer + "-token", CopyName: "semaphore-remote-aws"}
		if steps.TokenNamespace != want.TokenNamespace || steps.TokenSecret != want.TokenSecret || steps.CopyName != want.CopyName {
			t.Errorf("%s: steps %+v, want %+v", consumer, steps, want)
		}
		if _, err := steps.remoteEntryOf("aws", "<not filled>"); err == nil {
			t.Errorf("%s: an entry with a placeholder left is accepted", consumer)
		}
		entry, err := steps.remoteEntryOf("aws", "Q0EK")
		if err != nil {
			t.Fatalf("%s: %v", consumer, err)
		}
		if entry["server"] != "https://127.0.0.1:6443" || entry["caData"] != "Q0EK" {
			t.Errorf("%s: entry %v", consumer, entry)
		}
		if ts, _ := entry["tokenSecret"].(map[string]any); ts["name"] != "semaphore-remote-aws" || ts["key"] != "token" {
			t.Errorf("%s: tokenSecret %v, want the copied Secret's token", consumer, entry["tokenSecret"])
		}
	}
	if _, err := parseNotes(rel.Info.Notes, "azure"); err == nil {
		t.Error("a consumer the NOTES do not name is found")
	}
}
