package guide

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Only the blocks fenced as sh are found, in order, with the number of their first line, their
// text unindented as far as their fence was; other fences, longer fences holding a shorter
// one, tildes and an empty block are read as markdown reads them.
func TestBlocks(t *testing.T) {
	markdown := strings.Join([]string{
		"# A guide", //                                  1
		"",          //                                  2
		"```sh",     //                                  3
		"echo one",  //                                  4
		"echo two",  //                                  5
		"```",       //                                  6
		"```console",
		"$ echo not run",
		"```",
		"````sh title", //                              10
		"echo three",
		"```",
		"still three",
		"````",
		"  ~~~sh", //                                   15
		"  indented",
		"   more",
		"less",
		"  ~~~~",
		"```yaml", //                                   20
		"a: 1",
		"```",
		"```sh",
		"```",
		"``` sh", //                                    25
		"echo four\r",
		"```",
		"```sh `not a fence`",
		"text",
	}, "\n")
	got, err := Blocks([]byte(markdown))
	if err != nil {
		t.Fatal(err)
	}
	want := []Block{
		{Line: 4, Text: "echo one\necho two\n", Section: "A guide"},
		{Line: 11, Text: "echo three\n```\nstill three\n", Section: "A guide"},
		{Line: 16, Text: "indented\n more\nless\n", Section: "A guide"},
		{Line: 24, Text: "", Section: "A guide"},
		{Line: 26, Text: "echo four\n", Section: "A guide"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("blocks\n%+v\nwant\n%+v", got, want)
	}
}

// A block left open would swallow the rest of the guide: it is an error naming its fence.
// Each block carries the title of the last heading before it, and a heading inside a block is
// the block's text, not a heading.
func TestBlocksKnowTheirSection(t *testing.T) {
	markdown := "```sh\nbefore\n```\n## 1. Install\n```sh\n# a comment\n```\n### 2. Check ###x\n#not a heading\n```sh\ncheck\n```\n"
	got, err := Blocks([]byte(markdown))
	if err != nil {
		t.Fatal(err)
	}
	var sections []string
	for _, b := range got {
		sections = append(sections, b.Section)
	}
	if want := []string{"", "1. Install", "2. Check ###x"}; !slices.Equal(sections, want) {
		t.Errorf("sections %q, want %q", sections, want)
	}
}

func TestBlockLeftOpen(t *testing.T) {
	_, err := Blocks([]byte("text\n\n```sh\necho one\n````\n"))
	if err != nil {
		t.Fatalf("a longer closing fence: %v", err)
	}
	if _, err := Blocks([]byte("text\n\n````sh\necho one\n```\n")); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("error %v, want one naming line 3", err)
	}
}

// writeGuide writes markdown to a guide in a directory of its own and returns its path.
func writeGuide(t *testing.T, markdown string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "guide.md")
	if err := os.WriteFile(path, []byte(markdown), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The blocks run in order in the given directory with the given environment alone, what they
// print goes to Out after each block's text, and what a block exports and the directory it
// ends in carry over to the next. A failing block stops the run with its line; the blocks
// after it do not run. Each block runs under set -euo pipefail: an unset variable and a
// failure in a pipeline fail it too.
func TestRun(t *testing.T) {
	guide := writeGuide(t, strings.Join([]string{
		"# Guide",
		"```sh",
		`echo "hello $WHO" > greeting`, //             3
		"export CHOSEN=$WHO-1",
		"mkdir sub && cd sub",
		"```",
		"```console",
		"$ false",
		"```",
		"```sh",
		`echo "$CHOSEN in $(basename "$PWD")" > here`, // 11
		`test -z "${HOME:-}"`,
		"```",
		"```sh",
		"echo before the failure",
		"false", //                                    16
		"echo after the failure",
		"```",
		"```sh",
		"touch never",
		"```",
	}, "\n"))
	dir := t.TempDir()
	var out strings.Builder
	r := Runner{Dir: dir, Env: []string{"WHO=guide", "PATH=" + os.Getenv("PATH")}, Out: &out}
	err := r.Run(context.Background(), guide)
	if err == nil || !strings.HasPrefix(err.Error(), guide+":15: ") {
		t.Fatalf("error %v, want one naming %s:15", err, guide)
	}
	for file, want := range map[string]string{"greeting": "hello guide\n", "sub/here": "guide-1 in sub\n"} {
		if data, err := os.ReadFile(filepath.Join(dir, file)); err != nil || string(data) != want {
			t.Errorf("%s: %q, %v; want %q", file, data, err, want)
		}
	}
	for _, never := range []string{"never", "sub/never"} {
		if _, err := os.Stat(filepath.Join(dir, never)); err == nil {
			t.Errorf("%s: a block after the failing one ran", never)
		}
	}
	for _, want := range []string{"# " + guide + ":3\necho \"hello $WHO\"", "# " + guide + ":15\necho before the failure\nfalse\necho after the failure\nbefore the failure\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output does not hold %q:\n%s", want, out.String())
		}
	}
	if strings.Count(out.String(), "after the failure") != 1 || strings.Contains(out.String(), "$ false") {
		t.Errorf("output, want the failing block stopped at its failure and no console block:\n%s", out.String())
	}

	for name, block := range map[string]string{
		"an unset variable":     "echo $NOT_SET",
		"a failing pipeline":    "false | cat",
		"an unexported earlier": "export A=1; B=2\n```\n```sh\ntest -n \"${B:-}\"",
	} {
		guide := writeGuide(t, "```sh\n"+block+"\n```\n")
		if err := (Runner{Dir: t.TempDir()}).Run(context.Background(), guide); err == nil {
			t.Errorf("%s: the block passed", name)
		}
	}
}

// With a network namespace, each block runs under `ip netns exec`, with the directory and
// environment given.
func TestRunInNetns(t *testing.T) {
	r := Runner{Dir: "/guide", Env: []string{"A=1"}, Netns: "internet"}
	cmd := r.command(context.Background(), Block{Line: 3, Text: "true\n"}, "/state")
	if !slices.Equal(cmd.Args[:5], []string{"ip", "netns", "exec", "internet", "bash"}) || cmd.Dir != "/guide" || !slices.Equal(cmd.Env, r.Env) {
		t.Errorf("command %q in %s with %v", cmd.Args, cmd.Dir, cmd.Env)
	}
	if !strings.Contains(cmd.Args[6], "set -euo pipefail\ntrue\n") {
		t.Errorf("script %q", cmd.Args[6])
	}
}

// Select runs only the blocks it picks, here those of one section, in order.
func TestRunSelectsBlocks(t *testing.T) {
	guide := writeGuide(t, "## Install\n```sh\necho install >> ran\n```\n## Check\n```sh\necho check >> ran\n```\n")
	dir := t.TempDir()
	r := Runner{Dir: dir, Env: []string{"PATH=" + os.Getenv("PATH")}, Select: func(b Block) bool { return b.Section == "Check" }}
	if err := r.Run(context.Background(), guide); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "ran")); err != nil || string(data) != "check\n" {
		t.Errorf("ran %q, %v; want the Check block only", data, err)
	}
}
