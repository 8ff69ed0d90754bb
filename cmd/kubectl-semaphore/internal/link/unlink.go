package link

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// UnlinkOptions say what to unlink: one direction, the consumer To no longer reading the remote
// RemoteName.
type UnlinkOptions struct {
	// To is the consuming cluster, ToContext its context, named in messages.
	To        kubernetes.Interface
	ToContext string
	// Namespace is the namespace of the semaphore release in To, where link put the token.
	Namespace string
	// RemoteName is the remote's name, as the consumer knows it.
	RemoteName string
	// ToCluster is the consumer's name; "" to read it from the semaphore release in Namespace
	// when a values file needs it.
	ToCluster string
	// ValuesFile is the consumer's values file to take the remote out of ("" for none);
	// ValuesDir, when ValuesFile is "", names it <ValuesDir>/<consumer>.yaml.
	ValuesFile, ValuesDir string
}

// Unlinked is what Unlink did for one direction.
type Unlinked struct {
	Remote string
	// Consumer is the consumer's name, "" when no values file needed it.
	Consumer string
	// Secret is the namespace/name of the consumer's copy of the token, and Action what Unlink
	// did to it: deleted, or absent (there was none).
	Secret string
	Action Action
	// ValuesFile is the values file the remote was taken out of, and ValuesChanged whether it
	// was written. Entry is the remote's entry it had (nil: none), HadPort whether it gave the
	// remote a port in wireguard.listenPorts, and ListenPort that port.
	ValuesFile    string
	ValuesChanged bool
	Entry         *Entry
	HadPort       bool
	ListenPort    int
	// Notes say what is left to do.
	Notes []string
}

// Unlink undoes links: for each of unlinks, it deletes the consumer's copy of the remote's token
// that link made, and takes the remote's global.remotes entry and wireguard.listenPorts port out
// of the consumer's values file. What is missing is not an error: there is nothing to remove.
// A Secret of that name that link did not make (madeByLink) is refused and left alone. Every
// unlink is read and checked before anything is deleted or written, as in Run.
func Unlink(ctx context.Context, unlinks ...UnlinkOptions) ([]*Unlinked, error) {
	return checkThenWrite[UnlinkOptions, *Unlinked](ctx, unlinks, prepareUnlink)
}

// unlinking is an unlink read and checked, and what it will delete and write.
type unlinking struct {
	o UnlinkOptions
	// secret is the Secret to delete, nil for none.
	secret *corev1.Secret
	values *valuesRemoval
	res    *Unlinked
}

// prepareUnlink reads what o unlinks and checks it, deleting and writing nothing.
func prepareUnlink(ctx context.Context, o UnlinkOptions) (*unlinking, error) {
	if o.Namespace == "" {
		o.Namespace = defaultNamespace
	}
	name := SecretName(o.RemoteName)
	u := &unlinking{o: o, res: &Unlinked{Remote: o.RemoteName, Consumer: o.ToCluster, Secret: o.Namespace + "/" + name, Action: absent}}
	s, err := o.To.CoreV1().Secrets(o.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("context %s: reading Secret %s: %w", o.ToContext, u.res.Secret, err)
	case !madeByLink(s, o.RemoteName):
		return nil, fmt.Errorf("context %s: Secret %s was not made by kubectl semaphore link (it has neither the label %s=%s nor %s=%s set by field manager %s): unlink leaves it alone, and removed nothing; "+
			"delete it yourself (kubectl --context %s -n %s delete secret %s) once no release reads it",
			o.ToContext, u.res.Secret, linkedRemoteLabel, o.RemoteName, partOfLabel, partOf, fieldManager, o.ToContext, o.Namespace, name)
	default:
		u.secret = s
	}
	if o.ValuesFile == "" && o.ValuesDir == "" {
		u.notes()
		return u, nil
	}
	if u.res.Consumer == "" {
		if u.res.Consumer, err = localCluster(ctx, o.To, o.Namespace); err != nil {
			return nil, fmt.Errorf("context %s: %w", o.ToContext, err)
		}
	}
	u.res.ValuesFile = valuesPath(o.ValuesFile, o.ValuesDir, u.res.Consumer)
	if u.values, err = planRemoval(u.res.ValuesFile, u.res.Consumer, o.RemoteName); err != nil {
		return nil, err
	}
	u.res.Entry, u.res.HadPort, u.res.ListenPort = u.values.entry, u.values.hadPort, u.values.port
	u.notes()
	return u, nil
}

// apply deletes the Secret, as it was read, and writes the values file.
func (u *unlinking) apply(ctx context.Context) (*Unlinked, error) {
	o, res := u.o, u.res
	if u.secret != nil {
		// Only the Secret that was read and checked: one made again since is not checked.
		pre := metav1.Preconditions{UID: &u.secret.UID, ResourceVersion: &u.secret.ResourceVersion}
		err := o.To.CoreV1().Secrets(o.Namespace).Delete(ctx, u.secret.Name, metav1.DeleteOptions{Preconditions: &pre})
		switch {
		case err == nil:
			res.Action = deleted
		case apierrors.IsNotFound(err):
		case apierrors.IsConflict(err):
			return nil, fmt.Errorf("context %s: Secret %s changed while unlink read it: run unlink again", o.ToContext, res.Secret)
		default:
			return nil, fmt.Errorf("context %s: deleting Secret %s: %w", o.ToContext, res.Secret, err)
		}
	}
	if u.values == nil {
		return res, nil
	}
	var err error
	if res.ValuesChanged, err = u.values.write(); err != nil {
		return nil, err
	}
	return res, nil
}

// notes are what is left to do once the unlink is applied: the release still reads the remote
// until it is upgraded without it (when there was something to remove), and the remote still
// takes the token until it drops the consumer.
func (u *unlinking) notes() {
	o, res := u.o, u.res
	if u.secret != nil || (u.values != nil && u.values.out != nil) {
		res.Notes = append(res.Notes, "next: "+u.upgrade())
	}
	consumer := "this consumer"
	if res.Consumer != "" {
		consumer = res.Consumer
	}
	res.Notes = append(res.Notes,
		fmt.Sprintf("the token stays valid in %s until its semaphore-remote no longer has %s among its consumers: helm upgrade it without, or uninstall it, which deletes the consumer's ServiceAccount and token Secrets", o.RemoteName, consumer))
}

// upgrade says how to upgrade the consumer's release without the remote.
func (u *unlinking) upgrade() string {
	o, res := u.o, u.res
	how := fmt.Sprintf("take %s out of global.remotes and wireguard.listenPorts of the semaphore release in context %s, and helm upgrade it", o.RemoteName, o.ToContext)
	if res.ValuesFile != "" {
		how = fmt.Sprintf("helm upgrade the semaphore release in context %s with -f %s", o.ToContext, res.ValuesFile)
	}
	how += ", so that it stops reading " + o.RemoteName
	if u.secret != nil {
		how += fmt.Sprintf(" (until then, a pod of it that starts cannot mount the deleted Secret %s)", res.Secret)
	}
	return how
}

// madeByLink reports whether Secret s is the copy of remote's token that link made: labelled
// linkedRemoteLabel=remote, as link labels what it creates, or, made by an older link, with
// the label partOfLabel set by link's field manager (which sets labels only as it creates the
// Secret: one it only updated is not its own).
func madeByLink(s *corev1.Secret, remote string) bool {
	if s.Labels[linkedRemoteLabel] == remote {
		return true
	}
	return s.Labels[partOfLabel] == partOf && setBy(s.ManagedFields, fieldManager, "f:metadata", "f:labels", "f:"+partOfLabel)
}

// setBy reports whether manager set the field at path (of the managed fields' format,
// fieldsV1) of an object whose managed fields are fields.
func setBy(fields []metav1.ManagedFieldsEntry, manager string, path ...string) bool {
	for _, f := range fields {
		if f.Manager != manager || f.FieldsV1 == nil {
			continue
		}
		var set map[string]any
		if json.Unmarshal(f.FieldsV1.GetRawBytes(), &set) != nil {
			continue
		}
		found := true
		for _, key := range path {
			if set, found = set[key].(map[string]any); !found {
				break
			}
		}
		if found {
			return true
		}
	}
	return false
}
