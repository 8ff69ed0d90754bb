package testbed

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DocsCorefile is the Corefile docs/coredns.md tells users to deploy, as it stands there: what
// the lab's CoreDNS pods run.
func DocsCorefile() (string, error) {
	return docsBlock("corefile")
}

// docsBlock is the only code block of docs/coredns.md fenced as ```lang.
func docsBlock(lang string) (string, error) {
	doc, err := os.ReadFile(filepath.Join(RepoRoot(), "docs", "coredns.md"))
	if err != nil {
		return "", err
	}
	return fencedBlock(string(doc), lang)
}

// CorefileFromDocs returns the Corefile that docs/coredns.md tells users to deploy (its only
// ```corefile block), changed only where CoreDNS run outside a pod must differ from CoreDNS in a
// cluster:
//
//   - the kubernetes plugin gets `kubeconfig <kubeconfig>` (in a pod it uses its ServiceAccount);
//   - the fixed ports (.:53, health's 8080, ready's 8181, prometheus' 9153) become free ports on
//     127.0.0.1, so servers can run side by side (StartCoreDNS chooses the DNS port);
//   - the mirror namespace "semaphore" in each rewrite target (mirrors and global services)
//     becomes mirrorNamespace.
//
// It returns an error when the block no longer has the shape these changes expect, so the doc
// and its tests cannot drift apart silently.
func CorefileFromDocs(kubeconfig, mirrorNamespace string) (string, error) {
	block, err := DocsCorefile()
	if err != nil {
		return "", err
	}
	if strings.ContainsAny(kubeconfig, "\"\\ \t\n") {
		return "", fmt.Errorf("kubeconfig path %q needs quoting in a Corefile", kubeconfig)
	}
	// Whole trimmed lines, replaced keeping their indentation.
	lines := map[string]string{
		".:53 {":           ". {\n    bind 127.0.0.1",
		"health {":         "health 127.0.0.1:0 {",
		"ready":            "ready 127.0.0.1:0",
		"prometheus :9153": "prometheus 127.0.0.1:0",
	}
	seen := map[string]int{}
	var out []string
	for _, line := range strings.Split(block, "\n") {
		trimmed := strings.TrimSpace(line)
		indent := line[:len(line)-len(strings.TrimLeft(line, " \t"))]
		if repl, ok := lines[trimmed]; ok {
			seen[trimmed]++
			line = indent + repl
		}
		if strings.HasPrefix(trimmed, "kubernetes ") && strings.HasSuffix(trimmed, "{") {
			seen["kubernetes"]++
			line += "\n" + indent + "   kubeconfig " + kubeconfig
		}
		out = append(out, line)
	}
	lines["kubernetes"] = ""
	for want := range lines {
		if seen[want] != 1 {
			return "", fmt.Errorf("the corefile block has %q %d times, want once", want, seen[want])
		}
	}
	return retarget(strings.Join(out, "\n"), mirrorNamespace)
}

// retarget replaces the mirror namespace "semaphore" in the target of every rewrite line of
// corefile with mirrorNamespace. Each rewrite line must have it exactly once, and no other line
// at all, so that no target is missed.
func retarget(corefile, mirrorNamespace string) (string, error) {
	const target = ".semaphore.svc.cluster.local."
	lines := strings.Split(corefile, "\n")
	rewrites := 0
	for i, line := range lines {
		n := strings.Count(line, target)
		if !strings.HasPrefix(strings.TrimSpace(line), "rewrite ") {
			if n > 0 {
				return "", fmt.Errorf("the corefile block has %q outside a rewrite line: %s", target, strings.TrimSpace(line))
			}
			continue
		}
		if n != 1 {
			return "", fmt.Errorf("a rewrite line has %q %d times, want once (in its target): %s", target, n, strings.TrimSpace(line))
		}
		rewrites++
		lines[i] = strings.Replace(line, target, "."+mirrorNamespace+".svc.cluster.local.", 1)
	}
	if rewrites == 0 {
		return "", errors.New("the corefile block has no rewrite line")
	}
	return strings.Join(lines, "\n"), nil
}

// fencedBlock returns the content of the only code block in markdown fenced as ```lang.
func fencedBlock(markdown, lang string) (string, error) {
	var blocks []string
	var cur []string
	in := false
	for _, line := range strings.Split(markdown, "\n") {
		switch {
		case !in && strings.TrimSpace(line) == "```"+lang:
			in, cur = true, nil
		case in && strings.TrimSpace(line) == "```":
			in = false
			blocks = append(blocks, strings.Join(cur, "\n")+"\n")
		case in:
			cur = append(cur, line)
		}
	}
	if in {
		return "", errors.New("unterminated ```" + lang + " block")
	}
	if len(blocks) != 1 {
		return "", fmt.Errorf("%d ```%s blocks, want exactly one", len(blocks), lang)
	}
	return blocks[0], nil
}
