{{- /*
Remote clusters' credentials.

Each item of global.remotes:
  name              DNS label, the remote cluster's name
  server            https URL of its API server
  caData            base64 PEM of its CA (optional; system roots otherwise)
  tokenSecret       {name, key (default "token")}: an existing Secret holding a token (from
                    the semaphore-remote chart) -> the chart renders a kubeconfig Secret
                    "<fullname>-remote-<name>" (key "kubeconfig") whose user reads tokenFile
                    "token", resolved against the kubeconfig's directory, and projects both into
                    /etc/semaphore/remotes/<name>/{kubeconfig,token}. client-go re-reads the token
                    file, so rotating the token Secret needs no restart.
  kubeconfigSecret  {name, key (default "kubeconfig")}: an existing Secret holding a whole
                    kubeconfig -> projected as /etc/semaphore/remotes/<name>/kubeconfig; server and
                    caData are not used.
Every component renders its own kubeconfig Secrets, so each subchart works alone.
*/ -}}

{{- /*
semaphore-common.remotesDir: the directory the remotes are mounted under
(SEMAPHORE_REMOTES_DIR).
  dict "ctx" $ "component" "service-mirror"   (reads nothing from it)
*/ -}}
{{- define "semaphore-common.remotesDir" -}}
/etc/semaphore/remotes
{{- end -}}

{{- /*
semaphore-common.remoteSecretName: the name of the kubeconfig Secret the chart renders for a
remote with tokenSecret.
  dict "ctx" $ "component" "service-mirror" "remote" <item of global.remotes>
*/ -}}
{{- define "semaphore-common.remoteSecretName" -}}
{{- printf "%s-remote-%s" (include "semaphore-common.fullname" .) .remote.name -}}
{{- end -}}

{{- /*
semaphore-common.remoteSecrets: one Secret (key "kubeconfig") per remote with tokenSecret, as
YAML documents each starting with "---". Renders nothing when no remote uses tokenSecret.
  dict "ctx" $ "component" "service-mirror"
*/ -}}
{{- define "semaphore-common.remoteSecrets" -}}
{{- $top := . -}}
{{- range $r := (include "semaphore-common.global" . | fromYaml).remotes }}
{{- if $r.tokenSecret }}
{{- $kubeconfig := dict
  "apiVersion" "v1"
  "kind" "Config"
  "clusters" (list (dict "name" $r.name "cluster" (ternary (dict "server" $r.server "certificate-authority-data" $r.caData) (dict "server" $r.server) (not (empty $r.caData)))))
  "users" (list (dict "name" "semaphore" "user" (dict "tokenFile" "token")))
  "contexts" (list (dict "name" $r.name "context" (dict "cluster" $r.name "user" "semaphore")))
  "current-context" $r.name
}}
---
apiVersion: v1
kind: Secret
metadata:
  name: {{ include "semaphore-common.remoteSecretName" (dict "ctx" $top.ctx "component" $top.component "remote" $r) }}
  namespace: {{ $top.ctx.Release.Namespace }}
  labels:
    {{- include "semaphore-common.labels" $top | nindent 4 }}
    semaphore.uw.io/remote: {{ $r.name }}
type: Opaque
data:
  kubeconfig: {{ toYaml $kubeconfig | b64enc }}
{{- end }}
{{- end }}
{{- end -}}

{{- /*
semaphore-common.remotesChecksum: a hash of what the remotes' kubeconfigs depend on, for a pod
template annotation (checksum/remotes) so that changing a remote rolls the pods. Token Secrets
are not part of it: their rotation is picked up without a restart.
  dict "ctx" $ "component" "service-mirror"
*/ -}}
{{- define "semaphore-common.remotesChecksum" -}}
{{- (include "semaphore-common.global" . | fromYaml).remotes | toJson | sha256sum -}}
{{- end -}}

{{- /*
semaphore-common.remoteVolumes: the pod's volume items (no "volumes:" key), one projected volume
"remote-<name>" per remote, mode 0440 (readable through the pod's fsGroup, or by root). Renders
nothing (not even a newline) without remotes, so a pod with no other volumes can do
  {{- with (include "semaphore-common.remoteVolumes" $c) }}
  volumes:
    {{- . | nindent 8 }}
  {{- end }}
and one with its own volumes appends it after them.
  dict "ctx" $ "component" "service-mirror"
*/ -}}
{{- define "semaphore-common.remoteVolumes" -}}
{{- include "semaphore-common.remoteVolumes.items" . | trim -}}
{{- end -}}

{{- /* (internal) the items of semaphore-common.remoteVolumes, with a leading newline */ -}}
{{- define "semaphore-common.remoteVolumes.items" -}}
{{- $top := . -}}
{{- range $r := (include "semaphore-common.global" . | fromYaml).remotes }}
- name: remote-{{ $r.name }}
  projected:
    defaultMode: 288  # 0440: readable by the pod's group (fsGroup) only
    sources:
    {{- if $r.tokenSecret }}
      - secret:
          name: {{ include "semaphore-common.remoteSecretName" (dict "ctx" $top.ctx "component" $top.component "remote" $r) }}
          items:
            - key: kubeconfig
              path: kubeconfig
      - secret:
          name: {{ $r.tokenSecret.name }}
          items:
            - key: {{ $r.tokenSecret.key | default "token" }}
              path: token
    {{- else }}
      - secret:
          name: {{ $r.kubeconfigSecret.name }}
          items:
            - key: {{ $r.kubeconfigSecret.key | default "kubeconfig" }}
              path: kubeconfig
    {{- end }}
{{- end }}
{{- end -}}

{{- /*
semaphore-common.remoteVolumeMounts: the container's volumeMount items (no "volumeMounts:" key),
each remote read-only at /etc/semaphore/remotes/<name>. Renders nothing (not even a newline)
without remotes; use it like semaphore-common.remoteVolumes.
  dict "ctx" $ "component" "service-mirror"
*/ -}}
{{- define "semaphore-common.remoteVolumeMounts" -}}
{{- include "semaphore-common.remoteVolumeMounts.items" . | trim -}}
{{- end -}}

{{- /* (internal) the items of semaphore-common.remoteVolumeMounts, with a leading newline */ -}}
{{- define "semaphore-common.remoteVolumeMounts.items" -}}
{{- range $r := (include "semaphore-common.global" . | fromYaml).remotes }}
- name: remote-{{ $r.name }}
  mountPath: {{ include "semaphore-common.remotesDir" $ }}/{{ $r.name }}
  readOnly: true
{{- end }}
{{- end -}}

{{- /*
semaphore-common.remotePodRanges: SEMAPHORE_REMOTE_POD_RANGES, every podRanges entry of
global.remotes as remote:CIDR pairs, comma-separated, in the order of the remotes; empty when
no remote has any.
  dict "ctx" $ "component" "service-mirror"
*/ -}}
{{- define "semaphore-common.remotePodRanges" -}}
{{- $pairs := list -}}
{{- range $r := (include "semaphore-common.global" . | fromYaml).remotes }}
{{- range $cidr := ($r.podRanges | default list) }}
{{- $pairs = append $pairs (printf "%s:%s" $r.name $cidr) -}}
{{- end }}
{{- end }}
{{- join "," $pairs -}}
{{- end -}}
