// Package cli is the command line of kubectl-semaphore: the root command with kubectl's client
// flags, and one file per subcommand.
package cli

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"reflect"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// options are what every subcommand shares: kubectl's client flags (--kubeconfig, --context,
// --namespace, ...) and where to write.
type options struct {
	flags       *genericclioptions.ConfigFlags
	out, errOut io.Writer
	// started is set once cobra has taken the command line (the command, its flags and
	// arguments) and the command runs: an error before is one of usage.
	started bool
}

// The exit statuses, which the root's help and docs/cli.md document.
const (
	// exitProblems: the command ran and found problems (a check failed).
	exitProblems = 1
	// exitCannotRun: the command could not do what it was asked (usage, kubeconfig, an API
	// server it cannot reach, any other error).
	exitCannotRun = 2
)

// exitStatuses is the root help's part on exit statuses.
const exitStatuses = `Exit status:
  0  the command did what it was asked (check: no check failed)
  1  check ran, and a check failed
  2  the command could not run: a usage error (an unknown command or flag, a bad flag value,
     an unknown -o format or --skip check), a kubeconfig or context it cannot use, an API
     server it cannot reach, or another error`

// exitError is an error that only sets the exit status: the command has printed what went wrong.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// usageError is an error in how the command was called, which a command finds itself (flags
// that do not go together, an unknown --skip check): exit status 2, pointing at the help.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// Main runs the command line with args and returns the exit status: 0 on success, 1 when the
// command found problems (check), 2 when it could not run (exitStatuses).
func Main(args []string, out, errOut io.Writer) int {
	o := &options{flags: genericclioptions.NewConfigFlags(true), out: out, errOut: errOut}
	root := newRoot(o)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	var exit exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.code
	case !o.started || errors.As(err, new(usageError)):
		fmt.Fprintf(errOut, "error: %v\nSee '%s --help' for usage.\n", err, cmd.CommandPath())
	default:
		fmt.Fprintf(errOut, "error: %v\n", err)
	}
	return exitCannotRun
}

// unreachable says of err, from reading the cluster of a context, when it is that the API
// server did not answer at all (no connection, TLS, a timeout: a *url.Error, not an answer).
func unreachable(err error) error {
	if errors.As(err, new(*url.Error)) {
		return fmt.Errorf("cannot reach the API server: %w", err)
	}
	return err
}

// newRoot returns the root command of o.
func newRoot(o *options) *cobra.Command {
	root := &cobra.Command{
		Use:   "kubectl-semaphore",
		Short: "Link Semaphore clusters, check them, and see the mesh",
		Long: `kubectl semaphore links Semaphore clusters and undoes it (link, unlink), checks that they work together (check),
shows the mesh (status, graph) and the versions of the plugin and of the components (version).
It works on kubeconfig contexts as kubectl does: every client flag below applies to every
context a command reads, --contexts, --from and --to included.

` + exitStatuses,
		// kubectl runs the plugin as "kubectl semaphore": the help says so.
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl semaphore"},
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(o.out)
	root.SetErr(o.errOut)
	o.flags.AddFlags(root.PersistentFlags())
	for _, sub := range []func(*options) *cobra.Command{
		newLink,
		newUnlink,
		newCheck,
		newStatus,
		newGraph,
		newVersion,
	} {
		cmd := sub(o)
		// cobra runs RunE once it has taken the command line: the command, every flag and
		// argument, and the flags' groups.
		run := cmd.RunE
		cmd.RunE = func(cmd *cobra.Command, args []string) error {
			o.started = true
			return run(cmd, args)
		}
		root.AddCommand(cmd)
	}
	return root
}

// restConfig is the client configuration of kubeconfig context context ("" for the current
// one, or --context), with the other client flags applied.
func (o *options) restConfig(context string) (*rest.Config, error) {
	if context == "" {
		return o.flags.ToRawKubeConfigLoader().ClientConfig()
	}
	loader := o.flagsFor(context).ToRawKubeConfigLoader()
	raw, err := loader.RawConfig()
	if err != nil {
		return nil, err
	}
	if _, ok := raw.Contexts[context]; !ok {
		return nil, fmt.Errorf("no context %q in the kubeconfig", context)
	}
	return loader.ClientConfig()
}

// flagsFor are the client flags with context in place of --context: every other flag (--as,
// --token, --user, --request-timeout, --insecure-skip-tls-verify, ...) applies to a context a
// command names as it does to the current one. Every exported field of ConfigFlags (a flag's
// value, or WrapConfigFn) is copied, so that a flag a newer cli-runtime adds is not dropped;
// the unexported ones are its cache of the loaded configuration, which must not be shared.
func (o *options) flagsFor(context string) *genericclioptions.ConfigFlags {
	flags := genericclioptions.NewConfigFlags(false)
	dst, src := reflect.ValueOf(flags).Elem(), reflect.ValueOf(o.flags).Elem()
	for i := range dst.NumField() {
		if dst.Type().Field(i).IsExported() {
			dst.Field(i).Set(src.Field(i))
		}
	}
	flags.Context = &context
	return flags
}

// namespace is -n ("" when not given).
func (o *options) namespace() string {
	if o.flags.Namespace == nil {
		return ""
	}
	return *o.flags.Namespace
}

// client is a client of kubeconfig context context, as restConfig.
func (o *options) client(context string) (kubernetes.Interface, *rest.Config, error) {
	cfg, err := o.restConfig(context)
	if err != nil {
		return nil, nil, err
	}
	c, err := kubernetes.NewForConfig(cfg)
	return c, cfg, err
}
