package check

import (
	"regexp"
	"strconv"
	"strings"
)

// serverBlock is one server block of a Corefile: its keys (zones, with scheme and port) and its
// directives (plugins), in order.
type serverBlock struct {
	keys       []string
	directives []directive
}

// directive is one plugin line with its arguments, and the lines of its block, if any.
type directive struct {
	name  string
	args  []string
	block [][]string
}

// parseCorefile reads the server blocks of a Corefile: enough of its syntax for the plugins'
// lines (comments, one directive per line, blocks in braces); quoting is not handled.
func parseCorefile(text string) []serverBlock {
	var out []serverBlock
	var keys []string
	var cur *serverBlock
	var open *directive
	depth := 0
	for _, line := range strings.Split(text, "\n") {
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		opens := fields[len(fields)-1] == "{"
		if opens {
			fields = fields[:len(fields)-1]
		}
		switch {
		case len(fields) == 1 && fields[0] == "}" && !opens:
			depth--
			if depth == 0 && cur != nil {
				out, cur = append(out, *cur), nil
			}
			if depth <= 1 {
				open = nil
			}
		case depth == 0:
			keys = append(keys, fields...)
			if opens {
				cur, keys, depth = &serverBlock{keys: keys}, nil, 1
			}
		case depth == 1 && len(fields) > 0:
			cur.directives = append(cur.directives, directive{name: fields[0], args: fields[1:]})
			if opens {
				open, depth = &cur.directives[len(cur.directives)-1], 2
			}
		case open != nil:
			open.block = append(open.block, fields)
			if opens {
				depth++
			}
		}
	}
	return out
}

// serves reports whether the block serves name: one of its zones is the root or holds name.
func (b serverBlock) serves(name string) bool {
	for _, k := range b.keys {
		zone := k
		if i := strings.Index(zone, "://"); i >= 0 {
			zone = zone[i+3:]
		}
		if i := strings.LastIndex(zone, ":"); i >= 0 {
			zone = zone[:i]
		}
		zone = strings.TrimSuffix(zone, ".") + "."
		if zone == "." || name == zone || strings.HasSuffix(name, "."+zone) {
			return true
		}
	}
	return false
}

// clusterDomain is the first zone of the block's kubernetes plugin (cluster.local by default).
func (b serverBlock) clusterDomain() string {
	for _, d := range b.directives {
		if d.name == "kubernetes" && len(d.args) > 0 {
			return strings.TrimSuffix(d.args[0], ".")
		}
	}
	return "cluster.local"
}

// rewriteRule is a `rewrite name regex FROM TO` rule; answers says it rewrites the answers back
// (answer auto, or answer name), which stub resolvers need.
type rewriteRule struct {
	text     string
	from     *regexp.Regexp
	to       string
	answers  bool
	badRegex error
}

// rewrites are the name regex rewrite rules of the block, single-line or with a block.
func (b serverBlock) rewrites() []rewriteRule {
	var out []rewriteRule
	for _, d := range b.directives {
		if d.name != "rewrite" {
			continue
		}
		args := d.args
		if len(args) > 0 && (args[0] == "stop" || args[0] == "continue") {
			args = args[1:]
		}
		lines := [][]string{args}
		if len(d.block) > 0 {
			lines = d.block
		}
		var rule *rewriteRule
		for _, l := range lines {
			switch {
			case len(l) >= 4 && l[0] == "name" && l[1] == "regex":
				re, err := regexp.Compile(l[2])
				rule = &rewriteRule{text: "rewrite " + strings.Join(l, " "), from: re, to: l[3], badRegex: err,
					answers: len(l) >= 6 && l[4] == "answer" && (l[5] == "auto" || l[5] == "name")}
			case rule != nil && len(l) >= 2 && l[0] == "answer" && (l[1] == "auto" || l[1] == "name"):
				rule.answers = true
			}
		}
		if rule != nil {
			out = append(out, *rule)
		}
	}
	return out
}

// apply is what the rule makes of name, as CoreDNS does ({n} is the n-th group), and whether it
// matches at all.
func (r rewriteRule) apply(name string) (string, bool) {
	if r.badRegex != nil {
		return "", false
	}
	groups := r.from.FindStringSubmatch(strings.ToLower(name))
	if groups == nil {
		return "", false
	}
	out := r.to
	for i := len(groups) - 1; i >= 0; i-- {
		out = strings.ReplaceAll(out, "{"+strconv.Itoa(i)+"}", groups[i])
	}
	return out, true
}
