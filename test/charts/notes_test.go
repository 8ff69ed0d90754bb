package charts_test

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kube-semaphore/semaphore/internal/tooling/helmchart"
)

// semaphore-remote's NOTES, followed by hand, do what `kubectl semaphore link` does (the lab
// links with the plugin): for every consumer they name the consumer's token Secret, the Secret
// to copy the token to, and a global.remotes entry that, with the CA filled in, is one entry
// for this cluster with the copied token. They name the plugin too.
func TestNotesOfSemaphoreRemote(t *testing.T) {
	rel, err := helmchart.Render(remoteChart, "semaphore-remote", "semaphore-remote", map[string]any{
		"clusterName": "aws",
		"apiServer":   "https://127.0.0.1:6443",
		"consumers":   []any{map[string]any{"name": "gcp", "calicoIPAM": true}, map[string]any{"name": "merit", "calicoIPAM": true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rel.Info.Notes, "kubectl semaphore link --from <this context> --to <consumer's context> --to-cluster <consumer>") {
		t.Errorf("the NOTES do not name kubectl semaphore link:\n%s", rel.Info.Notes)
	}
	for _, consumer := range []string{"gcp", "merit"} {
		steps, err := parseNotes(rel.Info.Notes, consumer)
		if err != nil {
			t.Fatalf("%s: %v", consumer, err)
		}
		want := notesSteps{TokenNamespace: "semaphore-remote", TokenSecret: "semaphore-remote-" + consumer + "-token", CopyName: "semaphore-remote-aws"}
		if steps.TokenNamespace != want.TokenNamespace || steps.TokenSecret != want.TokenSecret || steps.CopyName != want.CopyName {
			t.Errorf("%s: steps %+v, want %+v", consumer, steps, want)
		}
		if _, err := steps.remoteEntryOf("aws", "<not filled>", "10.10.0.0/16"); err == nil {
			t.Errorf("%s: an entry with a placeholder left is accepted", consumer)
		}
		entry, err := steps.remoteEntryOf("aws", "Q0EK", "10.10.0.0/16")
		if err != nil {
			t.Fatalf("%s: %v", consumer, err)
		}
		if entry["server"] != "https://127.0.0.1:6443" || entry["caData"] != "Q0EK" || fmt.Sprint(entry["podRanges"]) != "[10.10.0.0/16]" {
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

// The NOTES' commands for one consumer, as a user reads them.
var (
	notesConsumer = regexp.MustCompile(`(?m)^=== Consumer (\S+) ===$`)
	notesToken    = regexp.MustCompile(`kubectl -n (\S+) get secret (\S+) -o jsonpath='\{\.data\.token\}'`)
	notesCopy     = regexp.MustCompile(`create secret generic (\S+) --from-file=token=/dev/stdin`)
	notesCA       = regexp.MustCompile(`kubectl -n (\S+) get secret (\S+) -o jsonpath='\{\.data\.ca\\\.crt\}'`)
)

// notesSteps are the names and the values entry that semaphore-remote's NOTES give a consumer.
type notesSteps struct {
	// TokenNamespace and TokenSecret hold the consumer's token (step 1) and the CA (step 2).
	TokenNamespace, TokenSecret string
	// CopyName is the Secret the token is copied to in the consumer's cluster (step 1).
	CopyName string
	// Entry is the global.remotes entry (step 3), caData still "<output of step 2>".
	Entry string
}

// parseNotes reads consumer's steps from the NOTES of a semaphore-remote release.
func parseNotes(notes, consumer string) (notesSteps, error) {
	section, err := consumerSection(notes, consumer)
	if err != nil {
		return notesSteps{}, err
	}
	tok := notesToken.FindStringSubmatch(section)
	cp := notesCopy.FindStringSubmatch(section)
	ca := notesCA.FindStringSubmatch(section)
	_, entry, found := strings.Cut(section, "\n  global:\n")
	if tok == nil || cp == nil || ca == nil || !found {
		return notesSteps{}, fmt.Errorf("the NOTES do not say how to get the token, copy it, get the CA and add the remote:\n%s", section)
	}
	if tok[1] != ca[1] || tok[2] != ca[2] {
		return notesSteps{}, fmt.Errorf("the NOTES read the token from %s/%s but the CA from %s/%s", tok[1], tok[2], ca[1], ca[2])
	}
	return notesSteps{TokenNamespace: tok[1], TokenSecret: tok[2], CopyName: cp[1], Entry: dedent(entry, "    ")}, nil
}

// remoteEntryOf is the NOTES' global.remotes entry with caData and podRanges, checked to be one
// entry for remote without placeholders left.
func (n notesSteps) remoteEntryOf(remote, caData, podRanges string) (map[string]any, error) {
	text := strings.ReplaceAll(n.Entry, "<output of step 2>", caData)
	text = strings.ReplaceAll(text, "<this cluster's pod ranges>", podRanges)
	if strings.Contains(text, "<") {
		return nil, fmt.Errorf("the NOTES' global.remotes entry still holds a placeholder:\n%s", text)
	}
	var values struct {
		Remotes []map[string]any `json:"remotes"`
	}
	if err := yaml.Unmarshal([]byte(text), &values); err != nil {
		return nil, fmt.Errorf("the global.remotes entry of the NOTES does not parse: %w\n%s", err, text)
	}
	if len(values.Remotes) != 1 || values.Remotes[0]["name"] != remote {
		return nil, fmt.Errorf("the NOTES' global.remotes entry is not one entry for %s: %v", remote, values.Remotes)
	}
	return values.Remotes[0], nil
}

// consumerSection is the part of the NOTES for consumer: from its "=== Consumer ===" line to
// the next one, or to the paragraph after the last.
func consumerSection(notes, consumer string) (string, error) {
	idx := notesConsumer.FindAllStringSubmatchIndex(notes, -1)
	for i, m := range idx {
		if notes[m[2]:m[3]] != consumer {
			continue
		}
		end := len(notes)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		} else if j := strings.Index(notes[m[1]:], "\nTo rotate"); j >= 0 {
			end = m[1] + j
		}
		return notes[m[1]:end], nil
	}
	return "", errors.New("no section for the consumer in the NOTES")
}

// dedent removes prefix from every line of the YAML block under "global:" and stops at the
// first line that is not indented by it (the end of the block).
func dedent(block, prefix string) string {
	var out []string
	for _, line := range strings.Split(block, "\n") {
		if strings.TrimSpace(line) == "" {
			break
		}
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok {
			break
		}
		out = append(out, rest)
	}
	return strings.Join(out, "\n")
}
