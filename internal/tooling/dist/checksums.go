package dist

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ChecksumsFile is the name of the checksums of a release's files, in sha256sum's format
// (`sha256sum -c SHA256SUMS` checks them).
const ChecksumsFile = "SHA256SUMS"

// SHA256 is the hex SHA-256 of the file at path.
func SHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// WriteChecksums writes ChecksumsFile into dir for the artifacts, sorted by name, and returns
// their checksums by name.
func WriteChecksums(dir string, artifacts []Artifact) (map[string]string, error) {
	sums := map[string]string{}
	var lines []string
	for _, a := range artifacts {
		sum, err := SHA256(filepath.Join(dir, a.Name))
		if err != nil {
			return nil, err
		}
		sums[a.Name] = sum
		lines = append(lines, fmt.Sprintf("%s  %s\n", sum, a.Name))
	}
	slices.Sort(lines)
	return sums, os.WriteFile(filepath.Join(dir, ChecksumsFile), []byte(strings.Join(lines, "")), 0o644)
}
