{{- /*
semaphore-common.env: the env items (no "env:" key) every component shares, in this order:
SEMAPHORE_LOCAL_CLUSTER, SEMAPHORE_REMOTES, SEMAPHORE_REMOTES_DIR, SEMAPHORE_ADMIN_ADDR,
SEMAPHORE_LOG_LEVEL, SEMAPHORE_CLIENT_QPS, SEMAPHORE_CLIENT_BURST, SEMAPHORE_RESYNC_PERIOD,
SEMAPHORE_REMOTE_PROBE_INTERVAL, SEMAPHORE_ADOPT_ORIGINAL (global.adoptOriginal), POD_NAME,
POD_NAMESPACE (downward API). The component's own variables follow it, then .Values.extraEnv (see
semaphore-common.extraEnv).
  dict "ctx" $ "component" "service-mirror"
Reads (each optional, defaults as the binaries'):
  .Values.logLevel             debug|info|warn|error (default info)
  .Values.client.qps           requests per second of each API client (default 200)
  .Values.client.burst         (default 400)
  .Values.resyncPeriod         Go duration (default 10m)
  .Values.remoteProbeInterval  Go duration (default 10s)
  .Values.adminPort            port of the admin server (default 8080)
  .Values.adminBindAddress     "podIP": the admin server listens on the pod's IP only (POD_IP from
                               the downward API, set just before SEMAPHORE_ADMIN_ADDR, which must
                               follow it to expand it); otherwise on every address of the pod's
                               network namespace. For a host-network pod the pod IP is the node's
                               InternalIP: "podIP" keeps the unauthenticated admin endpoints off its
                               other (public) addresses, while probes and scrapes, which use the
                               pod IP, still reach them.
*/ -}}
{{- define "semaphore-common.env" -}}
{{- $g := include "semaphore-common.global" . | fromYaml -}}
{{- $v := .ctx.Values -}}
{{- $client := $v.client | default dict -}}
{{- $names := list -}}
{{- range $g.remotes }}{{ $names = append $names (toString .name) }}{{ end -}}
- name: SEMAPHORE_LOCAL_CLUSTER
  value: {{ $g.clusterName | quote }}
- name: SEMAPHORE_REMOTES
  value: {{ join "," $names | quote }}
- name: SEMAPHORE_REMOTES_DIR
  value: {{ include "semaphore-common.remotesDir" . | quote }}
{{- if eq (toString $v.adminBindAddress) "podIP" }}
- name: POD_IP
  valueFrom:
    fieldRef:
      fieldPath: status.podIP
- name: SEMAPHORE_ADMIN_ADDR
  value: {{ printf "[$(POD_IP)]:%d" (include "semaphore-common.adminPort" . | int) | quote }}
{{- else }}
- name: SEMAPHORE_ADMIN_ADDR
  value: {{ printf ":%d" (include "semaphore-common.adminPort" . | int) | quote }}
{{- end }}
- name: SEMAPHORE_LOG_LEVEL
  value: {{ $v.logLevel | default "info" | quote }}
- name: SEMAPHORE_CLIENT_QPS
  value: {{ $client.qps | default 200 | toString | quote }}
- name: SEMAPHORE_CLIENT_BURST
  value: {{ $client.burst | default 400 | toString | quote }}
- name: SEMAPHORE_RESYNC_PERIOD
  value: {{ $v.resyncPeriod | default "10m" | quote }}
- name: SEMAPHORE_REMOTE_PROBE_INTERVAL
  value: {{ $v.remoteProbeInterval | default "10s" | quote }}
- name: SEMAPHORE_ADOPT_ORIGINAL
  value: {{ $g.adoptOriginal | toString | quote }}
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
{{- end -}}

{{- /*
semaphore-common.leaderElectionEnv: the env items of a Deployment's leader election:
SEMAPHORE_LEADER_ELECT, SEMAPHORE_LEADER_ELECT_NAMESPACE (the release namespace, from the
downward API: the pod's own namespace), SEMAPHORE_LEADER_ELECT_LEASE_NAME (the fullname, so two
releases in one namespace do not share a Lease; the leader-election Role is limited to it),
SEMAPHORE_LEADER_ELECT_IDENTITY (the pod's name) and the three durations.
  dict "ctx" $ "component" "service-mirror"
Reads .Values.leaderElection.{enabled (default true), leaseDuration (15s), renewDeadline (10s),
retryPeriod (2s)}.
*/ -}}
{{- define "semaphore-common.leaderElectionEnv" -}}
{{- $le := .ctx.Values.leaderElection | default dict -}}
- name: SEMAPHORE_LEADER_ELECT
  value: {{ ternary "true" "false" (ne (toString $le.enabled) "false") | quote }}
- name: SEMAPHORE_LEADER_ELECT_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: SEMAPHORE_LEADER_ELECT_LEASE_NAME
  value: {{ include "semaphore-common.fullname" . | quote }}
- name: SEMAPHORE_LEADER_ELECT_IDENTITY
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: SEMAPHORE_LEADER_ELECT_LEASE_DURATION
  value: {{ $le.leaseDuration | default "15s" | quote }}
- name: SEMAPHORE_LEADER_ELECT_RENEW_DEADLINE
  value: {{ $le.renewDeadline | default "10s" | quote }}
- name: SEMAPHORE_LEADER_ELECT_RETRY_PERIOD
  value: {{ $le.retryPeriod | default "2s" | quote }}
{{- end -}}

{{- /*
semaphore-common.extraEnv: .Values.extraEnv (a list of EnvVar) as env items; renders nothing
when empty. Put it last: a later duplicate name wins in Kubernetes.
  dict "ctx" $ "component" "service-mirror"
*/ -}}
{{- define "semaphore-common.extraEnv" -}}
{{- with .ctx.Values.extraEnv -}}
{{- toYaml . -}}
{{- end -}}
{{- end -}}
