package cli

import (
	"reflect"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
)

// twoContexts is a kubeconfig with the contexts a (current) and b, each with a cluster and
// user of its own, and a third user other.
const twoContexts = `apiVersion: v1
kind: Config
clusters:
- {name: a, cluster: {server: "https://a.example:6443"}}
- {name: b, cluster: {server: "https://b.example:6443"}}
users:
- {name: a, user: {token: a-token}}
- {name: b, user: {token: b-token}}
- {name: other, user: {token: other-token}}
contexts:
- {name: a, context: {cluster: a, user: a}}
- {name: b, context: {cluster: b, user: b}}
current-context: a
`

// optionsWith are the options of the command line args (kubectl's client flags).
func optionsWith(t *testing.T, args ...string) *options {
	t.Helper()
	o := &options{flags: genericclioptions.NewConfigFlags(true)}
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.flags.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return o
}

// kubectl's client flags apply to a context a command names itself (--contexts, --from, --to)
// as they do to the current one: the request timeout, impersonation, the token, the user, TLS;
// only the context, and so the cluster, is the one named.
func TestEveryClientFlagAppliesToANamedContext(t *testing.T) {
	kubeconfig := WriteKubeconfig(t, twoContexts)
	for _, tc := range []struct {
		args  []string
		check func(*rest.Config) bool
	}{
		{[]string{"--request-timeout", "7s"}, func(c *rest.Config) bool { return c.Timeout == 7*time.Second }},
		{[]string{"--as", "someone", "--as-group", "team", "--as-uid", "42"}, func(c *rest.Config) bool {
			return c.Impersonate.UserName == "someone" && reflect.DeepEqual(c.Impersonate.Groups, []string{"team"}) && c.Impersonate.UID == "42"
		}},
		{[]string{"--token", "given-token"}, func(c *rest.Config) bool { return c.BearerToken == "given-token" }},
		{[]string{"--user", "other"}, func(c *rest.Config) bool { return c.BearerToken == "other-token" }},
		{[]string{"--insecure-skip-tls-verify", "--tls-server-name", "api.example"}, func(c *rest.Config) bool {
			return c.Insecure && c.ServerName == "api.example"
		}},
	} {
		o := optionsWith(t, append(tc.args, "--kubeconfig", kubeconfig)...)
		for context, host := range map[string]string{"": "https://a.example:6443", "a": "https://a.example:6443", "b": "https://b.example:6443"} {
			cfg, err := o.restConfig(context)
			if err != nil {
				t.Fatalf("%q, context %q: %v", tc.args, context, err)
			}
			if cfg.Host != host || !tc.check(cfg) {
				t.Errorf("%q, context %q: host %s, %+v: want %s and the flags applied", tc.args, context, cfg.Host, cfg, host)
			}
		}
	}
	// Without flags, each context has its own user.
	cfg, err := optionsWith(t, "--kubeconfig", kubeconfig).restConfig("b")
	if err != nil || cfg.BearerToken != "b-token" || cfg.Timeout != 0 || cfg.Impersonate.UserName != "" {
		t.Errorf("context b without flags: %+v, %v", cfg, err)
	}
}

// flagsFor shares every client flag's value (each exported field of ConfigFlags, whichever
// cli-runtime has) but the context's.
func TestFlagsForANamedContextKeepEveryOtherFlag(t *testing.T) {
	o := optionsWith(t)
	named := o.flagsFor("b")
	if *named.Context != "b" || *o.flags.Context != "" {
		t.Errorf("--context of the named context %q, of the command line %q", *named.Context, *o.flags.Context)
	}
	src, dst := reflect.ValueOf(o.flags).Elem(), reflect.ValueOf(named).Elem()
	for i := range src.NumField() {
		f := src.Type().Field(i)
		if !f.IsExported() || f.Name == "Context" || f.Type.Kind() != reflect.Pointer {
			continue
		}
		if src.Field(i).Pointer() != dst.Field(i).Pointer() {
			t.Errorf("ConfigFlags.%s is not the command line's", f.Name)
		}
	}
}
