package sourcetree_test

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// licenceKinds tell a licence by a phrase of its text; the permissive ones alone are allowed in
// what Semaphore ships.
var licenceKinds = []struct{ kind, phrase string }{
	{"Apache-2.0", "Apache License\n                           Version 2.0"},
	{"Apache-2.0", "Apache License, Version 2.0"},
	{"MIT", "Permission is hereby granted, free of charge"},
	{"BSD", "Redistribution and use in source and binary forms"},
	{"ISC", "Permission to use, copy, modify, and"},
}

// licenceOf is the kind of the licence text, "" when none of licenceKinds.
func licenceOf(text []byte) string {
	for _, k := range licenceKinds {
		if bytes.Contains(text, []byte(k.phrase)) {
			return k.kind
		}
	}
	return ""
}

// The repository is under the Apache License 2.0, and says so at its root.
func TestTheRepositoryIsApacheLicensed(t *testing.T) {
	root := moduleRoot(t)
	text, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	if kind := licenceOf(text); kind != "Apache-2.0" {
		t.Errorf("LICENSE is %q, want the Apache License 2.0", kind)
	}
}

// Every other licence file in the repository stands beside code of others, which
// docs/licenses.md lists by its directory.
func TestCodeOfOthersIsListedWithItsLicence(t *testing.T) {
	root := moduleRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "licenses.md"))
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir // .git, the lab's directory, caches
		}
		if d.IsDir() || d.Name() != "LICENSE" || filepath.Dir(path) == root {
			return nil
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		if !bytes.Contains(doc, []byte("](../"+filepath.ToSlash(dir)+"/")) {
			t.Errorf("%s: code of others, not listed in docs/licenses.md", dir)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// shipped are the programs Semaphore ships: the components and the kubectl plugin.
var shipped = []string{"./components/wireguard", "./components/service-mirror", "./components/policy", "./cmd/kubectl-semaphore"}

// Every module linked into what Semaphore ships carries a permissive licence (licenceKinds), as
// docs/licenses.md says.
func TestShippedProgramsLinkOnlyPermissivelyLicensedModules(t *testing.T) {
	if testing.Short() {
		t.Skip("lists the build's modules with the go command")
	}
	cmd := exec.Command("go", append([]string{"list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}} {{.Dir}}{{end}}{{end}}"}, shipped...)...)
	cmd.Dir = moduleRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := map[string]bool{}
	lines := bufio.NewScanner(bytes.NewReader(out))
	for lines.Scan() {
		path, dir, ok := strings.Cut(lines.Text(), " ")
		if !ok || seen[path] {
			continue
		}
		seen[path] = true
		if kind := moduleLicence(t, dir); kind == "" {
			t.Errorf("module %s (%s): no licence file of a permissive licence", path, dir)
		}
	}
	if len(seen) == 0 {
		t.Fatal("go list named no module")
	}
}

var licenceFile = regexp.MustCompile(`(?i)^(licen[cs]e|copying)(\..+)?$`)

// moduleLicence is the kind of the licence of the module in dir.
func moduleLicence(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !licenceFile.MatchString(e.Name()) {
			continue
		}
		text, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if kind := licenceOf(text); kind != "" {
			return kind
		}
	}
	return ""
}
