// Package guide runs a markdown guide as its reader would: the shell blocks fenced as ```sh, in
// order, each with bash under `set -euo pipefail`, in one directory and with one environment,
// so that a guide whose commands do not work fails, naming the line of the block that did
// not. Blocks fenced otherwise (```console, ```text, ```yaml) are for reading only.
//
// As in one terminal, what a block exports and the directory it ends in carry over to the
// blocks after it; its shell functions and unexported variables do not.
package guide

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Block is one shell block of a guide.
type Block struct {
	// Line is the number, from 1, of the block's first line (the one after its opening fence).
	Line int
	// Text is the block's content, each line ending in a newline.
	Text string
	// Section is the title of the last heading before the block ("8. Check"), "" before the
	// first.
	Section string
}

// Language is the info string of the blocks that run.
const Language = "sh"

// Blocks are the ```sh blocks of a markdown text, in order. A fence is three or more backticks
// or tildes, indented by at most three spaces (as much indentation is taken off the block's
// lines), closed by a fence of the same character at least as long; a block left open is an
// error, as it would swallow the rest of the guide.
func Blocks(markdown []byte) ([]Block, error) { return BlocksOf(markdown, Language) }

// BlocksOf are the blocks of a markdown text fenced with info string language ("yaml"), in
// order, as Blocks finds them.
func BlocksOf(markdown []byte, language string) ([]Block, error) {
	var (
		out     []Block
		open    *fence
		block   Block
		section string
	)
	for i, line := range strings.Split(string(markdown), "\n") {
		line = strings.TrimSuffix(line, "\r")
		switch {
		case open == nil:
			if f, ok := openingFence(line); ok {
				open, block = &f, Block{Line: i + 2, Section: section}
			} else if title, ok := heading(line); ok {
				section = title
			}
		case open.closes(line):
			if open.info == language {
				out = append(out, block)
			}
			open = nil
		default:
			block.Text += open.unindent(line) + "\n"
		}
	}
	if open != nil {
		return nil, fmt.Errorf("line %d: a block opened with %s is never closed", block.Line-1, open.marker)
	}
	return out, nil
}

// heading is the title of an ATX heading line ("## 8. Check" is "8. Check").
func heading(line string) (string, bool) {
	rest := strings.TrimLeft(line, "#")
	if n := len(line) - len(rest); n == 0 || n > 6 || (rest != "" && rest[0] != ' ') {
		return "", false
	}
	return strings.TrimSpace(rest), true
}

// fence is an opening code fence: its marker (``` or ~~~, or longer), its indentation and its
// info string's first word.
type fence struct {
	marker string
	indent int
	info   string
}

// openingFence is line as an opening fence, if it is one.
func openingFence(line string) (fence, bool) {
	rest := strings.TrimLeft(line, " ")
	indent := len(line) - len(rest)
	if indent > 3 || len(rest) < 3 || (rest[0] != '`' && rest[0] != '~') {
		return fence{}, false
	}
	marker := rest[:len(rest)-len(strings.TrimLeft(rest, rest[:1]))]
	info := strings.TrimSpace(rest[len(marker):])
	if len(marker) < 3 || (marker[0] == '`' && strings.Contains(info, "`")) {
		return fence{}, false
	}
	word, _, _ := strings.Cut(info, " ")
	return fence{marker: marker, indent: indent, info: word}, true
}

// closes reports whether line closes the block f opened.
func (f *fence) closes(line string) bool {
	rest := strings.TrimLeft(line, " ")
	if len(line)-len(rest) > 3 {
		return false
	}
	run := strings.TrimLeft(rest, f.marker[:1])
	return len(rest)-len(run) >= len(f.marker) && strings.TrimSpace(run) == ""
}

// unindent takes off line as much of the leading spaces as the opening fence had.
func (f *fence) unindent(line string) string {
	for range f.indent {
		var ok bool
		if line, ok = strings.CutPrefix(line, " "); !ok {
			break
		}
	}
	return line
}

// Runner runs guides.
type Runner struct {
	// Dir is the directory the first block starts in.
	Dir string
	// Env is the whole environment of the blocks, as NAME=value (KUBECONFIG, PATH with the
	// programs the guide runs, and whatever the guide asks its reader to set); nil for this
	// process's.
	Env []string
	// Netns, when set, is the network namespace the blocks run in (`ip netns exec Netns`).
	Netns string
	// Out receives each block, then what it prints, standard output and error alike (nil:
	// nowhere).
	Out io.Writer
	// Select picks the blocks that run (nil: every one).
	Select func(Block) bool
}

// Run runs the ```sh blocks of the markdown file path, in order, and stops at the first that
// fails, with an error that names the file and the block's line.
func (r Runner) Run(ctx context.Context, path string) error {
	markdown, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	blocks, err := Blocks(markdown)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	state, err := os.CreateTemp("", "guide-state-")
	if err != nil {
		return err
	}
	state.Close()
	defer os.Remove(state.Name())
	if r.Out == nil {
		r.Out = io.Discard
	}
	for _, b := range blocks {
		if r.Select != nil && !r.Select(b) {
			continue
		}
		fmt.Fprintf(r.Out, "# %s:%d\n%s", path, b.Line, b.Text)
		if err := r.command(ctx, b, state.Name()).Run(); err != nil {
			return fmt.Errorf("%s:%d: %w", path, b.Line, err)
		}
	}
	return nil
}

// script is block b as bash runs it: the exports and directory the blocks before it left in
// the file state first (empty before the first block), then b under `set -euo pipefail`, then b's exports and directory
// saved for the next (readonly variables left out: they cannot be set again).
func script(b Block, state string) string {
	q := shellQuote(state)
	return ". " + q + "\n" +
		"set -euo pipefail\n" +
		b.Text +
		"{ export -p | grep -v '^declare -[a-zA-Z]*r'; printf 'cd %q\\n' \"$PWD\"; } > " + q + "\n"
}

// command is the process that runs block b, saving its exports to the file state.
func (r Runner) command(ctx context.Context, b Block, state string) *exec.Cmd {
	args := []string{"bash", "-c", script(b, state), "guide-block"}
	if r.Netns != "" {
		args = append([]string{"ip", "netns", "exec", r.Netns}, args...)
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir, cmd.Env = r.Dir, r.Env
	cmd.Stdout, cmd.Stderr = r.Out, r.Out
	// A block's programs are its process group: cancelling ends them all, not bash alone. And
	// a program a block left running in the background does not hold the run up past its end.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// shellQuote quotes s for bash, as one word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
