{{- /*
Objects every Deployment-based component (service-mirror, policy) shares.
*/ -}}

{{- /*
semaphore-common.podDisruptionBudget: a policy/v1 PodDisruptionBudget (YAML document starting with
"---") when .Values.podDisruptionBudget.enabled (default true), with
podDisruptionBudget.minAvailable (default 1) and unhealthyPodEvictionPolicy AlwaysAllow: every
pod unready for a local reason must not block node drains.
Not rendered with fewer than 2 replicas (.Values.replicas, default 2): a budget of one healthy
pod out of one would block every drain.
  dict "ctx" $ "component" "service-mirror"
*/ -}}
{{- define "semaphore-common.podDisruptionBudget" -}}
{{- $pdb := .ctx.Values.podDisruptionBudget | default dict -}}
{{- $replicas := 2 -}}
{{- if hasKey .ctx.Values "replicas" }}{{ $replicas = int .ctx.Values.replicas }}{{ end -}}
{{- if and (ne (toString $pdb.enabled) "false") (gt $replicas 1) }}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "semaphore-common.fullname" . }}
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "semaphore-common.labels" . | nindent 4 }}
spec:
  minAvailable: {{ $pdb.minAvailable | default 1 }}
  unhealthyPodEvictionPolicy: AlwaysAllow
  selector:
    matchLabels:
      {{- include "semaphore-common.selectorLabels" . | nindent 6 }}
{{- end }}
{{- end -}}

{{- /*
semaphore-common.leaderElectionRBAC: a Role + RoleBinding "<fullname>-leader-election" in the
release namespace (YAML documents starting with "---") that let the ServiceAccount run leader
election on its own Lease only: create (which RBAC cannot limit by name) and get/update of the
Lease named <fullname> (SEMAPHORE_LEADER_ELECT_LEASE_NAME). No Events: the election records
none (the Lease lock has no event recorder). Renders nothing unless .Values.rbac.create (default
true) and .Values.leaderElection.enabled (default true).
  dict "ctx" $ "component" "service-mirror"
*/ -}}
{{- define "semaphore-common.leaderElectionRBAC" -}}
{{- $rbac := .ctx.Values.rbac | default dict -}}
{{- $le := .ctx.Values.leaderElection | default dict -}}
{{- if and (ne (toString $rbac.create) "false") (ne (toString $le.enabled) "false") }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ include "semaphore-common.fullname" . }}-leader-election
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "semaphore-common.labels" . | nindent 4 }}
rules:
  - apiGroups: ["coordination.k8s.io"]
    resources: ["leases"]
    verbs: ["create"]
  - apiGroups: ["coordination.k8s.io"]
    resources: ["leases"]
    resourceNames: [{{ include "semaphore-common.fullname" . | quote }}]
    verbs: ["get", "update"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ include "semaphore-common.fullname" . }}-leader-election
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "semaphore-common.labels" . | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ include "semaphore-common.fullname" . }}-leader-election
subjects:
  - kind: ServiceAccount
    name: {{ include "semaphore-common.serviceAccountName" . }}
    namespace: {{ .ctx.Release.Namespace }}
{{- end }}
{{- end -}}

{{- /*
semaphore-common.affinity: the pod's affinity body (no key): .Values.affinity when set, otherwise
a preferred anti-affinity that spreads the replicas over nodes.
  dict "ctx" $ "component" "service-mirror"
*/ -}}
{{- define "semaphore-common.affinity" -}}
{{- if .ctx.Values.affinity -}}
{{- toYaml .ctx.Values.affinity -}}
{{- else -}}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels:
            {{- include "semaphore-common.selectorLabels" . | nindent 12 }}
{{- end -}}
{{- end -}}

{{- /*
semaphore-common.podScheduling: the pod spec's optional scheduling keys, each only when set:
priorityClassName, nodeSelector, tolerations, topologySpreadConstraints (affinity is
semaphore-common.affinity). Renders nothing (not even a newline) when none is set. Use at the pod
spec's indentation:
  {{- with (include "semaphore-common.podScheduling" $) }}
  {{- . | nindent 6 }}
  {{- end }}
  $ (the including chart's root context)
*/ -}}
{{- define "semaphore-common.podScheduling" -}}
{{- include "semaphore-common.podScheduling.items" . | trim -}}
{{- end -}}

{{- /* (internal) the keys of semaphore-common.podScheduling, with a leading newline */ -}}
{{- define "semaphore-common.podScheduling.items" -}}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
