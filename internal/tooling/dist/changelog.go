package dist

import (
	"fmt"
	"regexp"
	"strings"
)

// Unreleased is the CHANGELOG.md section of what is not released yet (Keep a Changelog).
const Unreleased = "Unreleased"

// sectionRE matches the heading of a release's section: "## [1.2.3] - 2026-11-28" or
// "## [Unreleased]".
var sectionRE = regexp.MustCompile(`(?m)^## \[([^\]]+)\]`)

// ReleaseNotes are the notes of release (a version without its v, or Unreleased) in changelog,
// a Keep a Changelog file: the body of its section, without the heading. An error when the
// changelog has no such section, or it is empty.
func ReleaseNotes(changelog, release string) (string, error) {
	headings := sectionRE.FindAllStringSubmatchIndex(changelog, -1)
	for i, h := range headings {
		if changelog[h[2]:h[3]] != release {
			continue
		}
		end := len(changelog)
		if i+1 < len(headings) {
			end = headings[i+1][0]
		}
		body := changelog[h[1]:end]
		body = body[strings.IndexByte(body+"\n", '\n')+1:] // the rest of the heading line: its date
		body = strings.TrimSpace(stripLinks(body))
		if body == "" {
			return "", fmt.Errorf("CHANGELOG.md: the section [%s] is empty", release)
		}
		return body + "\n", nil
	}
	return "", fmt.Errorf("CHANGELOG.md has no section [%s]: move what [%s] lists into a section \"## [%s] - <date>\" before releasing", release, Unreleased, release)
}

// linkRE matches a link reference definition ("[1.2.3]: https://..."), which ends a Keep a
// Changelog file and is no part of a release's notes.
var linkRE = regexp.MustCompile(`(?m)^\[[^\]]+\]: \S+\s*$`)

func stripLinks(s string) string { return linkRE.ReplaceAllString(s, "") }
