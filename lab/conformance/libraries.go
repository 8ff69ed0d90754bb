package conformance

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kube-semaphore/semaphore/internal/tooling/images"
)

// withLibraries returns the files that programs (path in the image -> path under root, a
// directory where Debian packages are unpacked) need to run: the programs themselves, their
// dynamic loader, and every shared library they load, transitively, each at the path where the
// loader looks for it by default (the image has no ld.so.cache and no LD_LIBRARY_PATH). Symbolic
// links are followed within root: the files are regular ones. They are sorted by path.
func withLibraries(root string, programs map[string]string) ([]images.File, error) {
	dirs, err := libraryDirs(root)
	if err != nil {
		return nil, err
	}
	files := map[string]images.File{}
	from := maps.Clone(programs) // path in the image -> path under root
	executable := map[string]bool{}
	loaders := map[string]bool{} // the interpreters' sonames
	pending := slices.Sorted(maps.Keys(programs))
	for _, p := range pending {
		executable[p] = true
	}
	for len(pending) > 0 {
		name := pending[0]
		pending = pending[1:]
		if _, done := files[name]; done {
			continue
		}
		data, err := readInRoot(root, from[name])
		if err != nil {
			return nil, err
		}
		interp, needed, err := dynamicDeps(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", from[name], err)
		}
		if interp != "" {
			from[interp], executable[interp] = interp, true
			loaders[path.Base(interp)] = true
			pending = append(pending, interp)
		}
		for _, soname := range needed {
			if loaders[soname] { // libc's: the loader is the one already there
				continue
			}
			dir, ok := findLibrary(root, dirs, soname)
			if !ok {
				return nil, fmt.Errorf("%s needs %s, which is in none of %s under %s: add its Debian package to ci/conformance-debs.sh",
					from[name], soname, strings.Join(dirs, ", "), root)
			}
			lib := "/" + path.Join(dir, soname)
			from[lib] = lib
			pending = append(pending, lib)
		}
		mode := fs.FileMode(0o644)
		if executable[name] {
			mode = 0o755
		}
		files[name] = images.File{Path: name, Mode: mode, Data: data}
	}
	var out []images.File
	for _, name := range slices.Sorted(maps.Keys(files)) {
		out = append(out, files[name])
	}
	return out, nil
}

// dynamicDeps returns what the ELF file data needs to run: its interpreter (the dynamic
// loader, "" for a static one) and the sonames of the libraries it links.
func dynamicDeps(data []byte) (interp string, needed []string, err error) {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			b := make([]byte, prog.Filesz)
			if _, err := prog.ReadAt(b, 0); err != nil {
				return "", nil, fmt.Errorf("reading the interpreter: %w", err)
			}
			interp = strings.TrimRight(string(b), "\x00")
		}
	}
	needed, err = f.ImportedLibraries()
	if err != nil {
		return "", nil, err
	}
	return interp, needed, nil
}

// libraryDirs are the directories under root (relative to it) where the dynamic loader looks
// for a library without ld.so.cache: Debian's multiarch directories (lib/x86_64-linux-gnu,
// usr/lib/x86_64-linux-gnu, ...), then lib and usr/lib.
func libraryDirs(root string) ([]string, error) {
	var dirs []string
	for _, parent := range []string{"lib", "usr/lib"} {
		multiarch, err := filepath.Glob(filepath.Join(root, parent, "*-linux-*"))
		if err != nil {
			return nil, err
		}
		for _, d := range multiarch {
			dirs = append(dirs, path.Join(parent, filepath.Base(d)))
		}
	}
	return append(dirs, "lib", "usr/lib"), nil
}

// findLibrary returns the first of dirs under root that holds soname.
func findLibrary(root string, dirs []string, soname string) (string, bool) {
	for _, d := range dirs {
		if _, err := os.Lstat(filepath.Join(root, d, soname)); err == nil {
			return d, true
		}
	}
	return "", false
}

// readInRoot reads the file at name (absolute or not, taken as under root), following
// symbolic links as if root were /.
func readInRoot(root, name string) ([]byte, error) {
	name = path.Clean("/" + name)
	for range 40 {
		full := filepath.Join(root, name)
		target, err := os.Readlink(full)
		if err != nil { // not a link: read what is there (or say it is missing)
			return os.ReadFile(full)
		}
		if !path.IsAbs(target) {
			target = path.Join(path.Dir(name), target)
		}
		name = path.Clean(target)
	}
	return nil, fmt.Errorf("%s under %s: too many levels of symbolic links", name, root)
}
