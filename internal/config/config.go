// Package config loads a component's configuration from environment variables.
//
// Every component decodes one struct with envconfig tags (`envconfig`, `default`, `required`,
// `desc`) and checks it with Validate. Errors name the variable they are about, so a bad value
// fails at start with one clear line.
package config

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/kelseyhightower/envconfig"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kube-semaphore/semaphore/internal/addrguard"
)

// Validator is a configuration struct that can check itself after decoding.
type Validator interface {
	Validate() error
}

// ErrHelp is returned by Load when the user asked for the list of variables.
var ErrHelp = errors.New("help requested")

// Load prints the variables of spec to out and returns ErrHelp when args ask for help (-h,
// -help, --help); otherwise it decodes the environment into spec and validates it.
func Load(args []string, out io.Writer, spec Validator) error {
	for _, a := range args {
		switch a {
		case "-h", "-help", "--help":
			printUsage(out, spec)
			return ErrHelp
		}
	}
	if err := envconfig.Process("", spec); err != nil {
		return cleanEnvconfigError(err)
	}
	return spec.Validate()
}

// printUsage lists the variables of spec (its fields with an envconfig tag, those of embedded
// and nested structs included) with their descriptions, defaults and whether they are required.
// It is written out rather than taken from envconfig.Usagef: that one runs a text/template, and a
// template's reflective method calls make the linker keep every exported method of every type in
// the binary (client-go's informers for every API group): megabytes each process maps.
func printUsage(out io.Writer, spec any) {
	fmt.Fprintln(out, "Environment variables:")
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for f := range t.Fields() {
			key := f.Tag.Get("envconfig")
			switch {
			case !f.IsExported(): // envconfig skips them too
				continue
			case key == "" && f.Type.Kind() == reflect.Struct:
				walk(f.Type)
				continue
			case key == "":
				continue
			}
			line := "      " + f.Tag.Get("desc")
			if d := f.Tag.Get("default"); d != "" {
				line += " (default " + d + ")"
			}
			if f.Tag.Get("required") == "true" {
				line += " (required)"
			}
			fmt.Fprintf(out, "  %s\n%s\n", key, line)
		}
	}
	walk(reflect.TypeOf(spec).Elem())
}

// cleanEnvconfigError turns envconfig's errors into one line that starts with the variable.
func cleanEnvconfigError(err error) error {
	var pe *envconfig.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: invalid value %q: %w", pe.KeyName, pe.Value, pe.Err)
	}
	msg := err.Error()
	// envconfig says "required key X missing value".
	if rest, ok := strings.CutPrefix(msg, "required key "); ok {
		if key, _, ok := strings.Cut(rest, " "); ok {
			return fmt.Errorf("%s: required but not set", key)
		}
	}
	return err
}

// Shared holds the settings every component has.
type Shared struct {
	LocalCluster        string        `envconfig:"SEMAPHORE_LOCAL_CLUSTER" required:"true" desc:"name of this cluster (a DNS label), as the remote clusters know it"`
	Remotes             []string      `envconfig:"SEMAPHORE_REMOTES" desc:"comma-separated names of the remote clusters to read from (DNS labels)"`
	RemotesDir          string        `envconfig:"SEMAPHORE_REMOTES_DIR" default:"/etc/semaphore/remotes" desc:"directory holding each remote's kubeconfig, as REMOTE/kubeconfig"`
	LocalKubeconfig     string        `envconfig:"SEMAPHORE_LOCAL_KUBECONFIG" desc:"kubeconfig of the local cluster; empty means in-cluster configuration"`
	AdminAddr           string        `envconfig:"SEMAPHORE_ADMIN_ADDR" default:":8080" desc:"listen address of the admin server (/metrics, /healthz, /readyz)"`
	LogLevel            slog.Level    `envconfig:"SEMAPHORE_LOG_LEVEL" default:"info" desc:"log level: debug, info, warn or error"`
	ClientQPS           float32       `envconfig:"SEMAPHORE_CLIENT_QPS" default:"200" desc:"client-side rate limit of each API client, requests per second (negative disables it)"`
	ClientBurst         int           `envconfig:"SEMAPHORE_CLIENT_BURST" default:"400" desc:"burst of each API client's rate limit"`
	ResyncPeriod        time.Duration `envconfig:"SEMAPHORE_RESYNC_PERIOD" default:"10m" desc:"how often every object is reconciled again even without a change"`
	RemoteProbeInterval time.Duration `envconfig:"SEMAPHORE_REMOTE_PROBE_INTERVAL" default:"10s" desc:"how often each remote API server is probed for remote_up (remote health is never readiness)"`
	Uninstall           bool          `envconfig:"SEMAPHORE_UNINSTALL" default:"false" desc:"the uninstall mode, which the charts' pre-delete hook switches on: remove everything this component made (for semaphore-wireguard, on its node too), whatever the remotes, then report ready and idle"`
	AdoptOriginal       bool          `envconfig:"SEMAPHORE_ADOPT_ORIGINAL" default:"false" desc:"take over, in place, the objects the original Semaphore tools made (see docs/migration.md); off, they are never touched"`
}

// Level is the configured log level.
func (s *Shared) Level() slog.Level { return s.LogLevel }

// UninstallMode is whether the component runs in the uninstall mode (SEMAPHORE_UNINSTALL).
func (s *Shared) UninstallMode() bool { return s.Uninstall }

// Validate checks the shared settings.
func (s *Shared) Validate() error {
	if err := CheckClusterName("SEMAPHORE_LOCAL_CLUSTER", s.LocalCluster); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, r := range s.Remotes {
		if err := CheckClusterName("SEMAPHORE_REMOTES", r); err != nil {
			return err
		}
		if r == s.LocalCluster {
			return fmt.Errorf("SEMAPHORE_REMOTES: %q is the local cluster (SEMAPHORE_LOCAL_CLUSTER)", r)
		}
		if seen[r] {
			return fmt.Errorf("SEMAPHORE_REMOTES: %q is listed twice", r)
		}
		seen[r] = true
	}
	if err := checkNamesApart(s.Remotes); err != nil {
		return fmt.Errorf("SEMAPHORE_REMOTES: %w", err)
	}
	if s.RemotesDir == "" && len(s.Remotes) > 0 {
		return errors.New("SEMAPHORE_REMOTES_DIR: must not be empty")
	}
	if s.AdminAddr == "" {
		return errors.New("SEMAPHORE_ADMIN_ADDR: must not be empty")
	}
	if s.ClientQPS == 0 {
		return errors.New("SEMAPHORE_CLIENT_QPS: must not be 0 (negative disables the limit)")
	}
	if s.ClientBurst < 1 && s.ClientQPS > 0 {
		return errors.New("SEMAPHORE_CLIENT_BURST: must be at least 1")
	}
	if s.ResyncPeriod < 0 {
		return errors.New("SEMAPHORE_RESYNC_PERIOD: must not be negative")
	}
	if s.RemoteProbeInterval <= 0 {
		return errors.New("SEMAPHORE_REMOTE_PROBE_INTERVAL: must be positive")
	}
	return nil
}

// CheckClusterName reports whether name is usable as a cluster name: a DNS label, since it
// becomes part of object names, label values and device names.
func CheckClusterName(variable, name string) error {
	if name == "" {
		return fmt.Errorf("%s: a cluster name must not be empty", variable)
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fmt.Errorf("%s: %q is not a valid cluster name: %s", variable, name, strings.Join(errs, "; "))
	}
	return nil
}

// globalPrefix is what the names of global services' Services start with ("gl-"); a remote's
// mirrors' names start with the remote's name and a dash in the same way.
const globalPrefix = "gl"

// checkNamesApart refuses remote names of which one is another's dash-prefix ("aws" and
// "aws-prod"), or is or starts with the global services' prefix ("gl", "gl-x"): the objects
// made for them are named <remote>-<namespace>-..., so aws's Service y in namespace prod-x and
// aws-prod's y in x would take the same name, and a remote "gl" the global services' names.
func checkNamesApart(remotes []string) error {
	for _, a := range append([]string{globalPrefix}, remotes...) {
		for _, b := range remotes {
			if strings.HasPrefix(b, a+"-") {
				return fmt.Errorf("%q and %q: %q is a prefix of %q up to a dash, so the names of the objects made for them can collide; rename one remote", a, b, a, b)
			}
		}
	}
	if slices.Contains(remotes, globalPrefix) {
		return fmt.Errorf("%q is the prefix of the global services' names; rename that remote", globalPrefix)
	}
	return nil
}

// RemoteRanges holds the ranges each remote's pod addresses must lie in, for the components that
// hold remotes to them (internal/addrguard).
type RemoteRanges struct {
	RemotePodRanges addrguard.Ranges `envconfig:"SEMAPHORE_REMOTE_POD_RANGES" desc:"ranges each remote's pod addresses must lie in, as remote:CIDR pairs, e.g. aws:198.18.0.0/16,aws:fd00:1::/48 (a remote may be named more than once); a remote's address outside them is refused. A remote not named is held only to the rules every remote is (no special, metadata or local address; no routed range wider than /16 or /48)"`
}

// Validate checks that every remote named is one of remotes.
func (r *RemoteRanges) Validate(remotes []string) error {
	if err := r.RemotePodRanges.CheckRemotes(remotes); err != nil {
		return fmt.Errorf("SEMAPHORE_REMOTE_POD_RANGES: %w", err)
	}
	if err := r.RemotePodRanges.CheckApart(); err != nil {
		return fmt.Errorf("SEMAPHORE_REMOTE_POD_RANGES: %w", err)
	}
	return nil
}

// Elected holds the settings of a component whose replicas elect a leader, the one that writes,
// and that holds the remotes to their pod ranges.
type Elected struct {
	Shared
	LeaderElection
	RemoteRanges
}

// Validate checks the shared settings, then completes the defaults of leader election for
// component and checks them. The remote ranges are left to the component.
func (e *Elected) Validate(component string) error {
	if err := e.Shared.Validate(); err != nil {
		return err
	}
	e.LeaderElection.Complete(component)
	return e.LeaderElection.Validate()
}

// LeaderElection holds the settings of leader election for components that run as Deployments.
type LeaderElection struct {
	Enabled       bool          `envconfig:"SEMAPHORE_LEADER_ELECT" default:"true" desc:"elect a leader among replicas through a Lease; only the leader writes"`
	Namespace     string        `envconfig:"SEMAPHORE_LEADER_ELECT_NAMESPACE" desc:"namespace of the Lease (defaults to POD_NAMESPACE)"`
	LeaseName     string        `envconfig:"SEMAPHORE_LEADER_ELECT_LEASE_NAME" desc:"name of the Lease (defaults to the component's name)"`
	Identity      string        `envconfig:"SEMAPHORE_LEADER_ELECT_IDENTITY" desc:"this replica's identity in the Lease (defaults to POD_NAME, then the host name)"`
	LeaseDuration time.Duration `envconfig:"SEMAPHORE_LEADER_ELECT_LEASE_DURATION" default:"15s" desc:"how long a lease is valid without renewal"`
	RenewDeadline time.Duration `envconfig:"SEMAPHORE_LEADER_ELECT_RENEW_DEADLINE" default:"10s" desc:"how long the leader keeps trying to renew before it gives up"`
	RetryPeriod   time.Duration `envconfig:"SEMAPHORE_LEADER_ELECT_RETRY_PERIOD" default:"2s" desc:"how often candidates try to acquire or renew the lease"`
}

// Complete fills the defaults that come from the pod's environment.
func (l *LeaderElection) Complete(component string) {
	if l.Namespace == "" {
		l.Namespace = os.Getenv("POD_NAMESPACE")
	}
	if l.LeaseName == "" {
		l.LeaseName = component
	}
	if l.Identity == "" {
		l.Identity = os.Getenv("POD_NAME")
	}
	if l.Identity == "" {
		l.Identity, _ = os.Hostname()
	}
}

// Validate checks the leader election settings.
func (l *LeaderElection) Validate() error {
	if !l.Enabled {
		return nil
	}
	if l.Namespace == "" {
		return errors.New("SEMAPHORE_LEADER_ELECT_NAMESPACE: required when leader election is enabled (or set POD_NAMESPACE)")
	}
	if errs := validation.IsDNS1123Label(l.Namespace); len(errs) > 0 {
		return fmt.Errorf("SEMAPHORE_LEADER_ELECT_NAMESPACE: %q: %s", l.Namespace, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Subdomain(l.LeaseName); len(errs) > 0 {
		return fmt.Errorf("SEMAPHORE_LEADER_ELECT_LEASE_NAME: %q: %s", l.LeaseName, strings.Join(errs, "; "))
	}
	if l.Identity == "" {
		return errors.New("SEMAPHORE_LEADER_ELECT_IDENTITY: could not be derived; set it")
	}
	if l.LeaseDuration <= l.RenewDeadline {
		return errors.New("SEMAPHORE_LEADER_ELECT_LEASE_DURATION: must be greater than SEMAPHORE_LEADER_ELECT_RENEW_DEADLINE")
	}
	if l.RetryPeriod <= 0 || l.RenewDeadline <= l.RetryPeriod {
		return errors.New("SEMAPHORE_LEADER_ELECT_RENEW_DEADLINE: must be greater than SEMAPHORE_LEADER_ELECT_RETRY_PERIOD, which must be positive")
	}
	return nil
}
