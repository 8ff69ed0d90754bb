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
semaphore-common.networkPolicy: a networking.k8s.io/v1 NetworkPolicy (YAML document starting
with "---") when .Values.networkPolicy.enabled (default false) that admits to the component's
pods nothing but the admin port (metrics, probes), from .Values.networkPolicy.adminFrom (a list
of NetworkPolicyPeers; default: every pod of the cluster). The controllers serve nothing else;
they only make connections (to the API servers), which an Ingress policy does not restrict.
Traffic from the pod's own node (the kubelet's probes) is always allowed by NetworkPolicy
implementations.
  dict "ctx" $ "component" "service-mirror"
*/ -}}
{{- define "semaphore-common.networkPolicy" -}}
{{- $np := .ctx.Values.networkPolicy | default dict -}}
{{- if eq (toString $np.enabled) "true" }}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: {{ include "semaphore-common.fullname" . }}
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "semaphore-common.labels" . | nindent 4 }}
spec:
  podSelector:
    matchLabels:
      {{- include "semaphore-common.selectorLabels" . | nindent 6 }}
  policyTypes: [Ingress]
  ingress:
    - ports:
        - port: admin
          protocol: TCP
      from:
        {{- toYaml ($np.adminFrom | default (list (dict "namespaceSelector" dict))) | nindent 8 }}
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
semaphore-common.localRangesRBAC: a ClusterRole + ClusterRoleBinding "<fullname>-local-ranges"
that let the ServiceAccount read what the local cluster's own ranges are read from, which no
remote address may fall in (docs/security.md): Nodes (their pod CIDRs and addresses),
ServiceCIDRs (the Service ranges) and Calico's IPAM blocks. Read only; list and watch, no get.
Renders nothing unless .Values.rbac.create (default true).
  dict "ctx" $ "component" "policy"
*/ -}}
{{- define "semaphore-common.localRangesRBAC" -}}
{{- $rbac := .ctx.Values.rbac | default dict -}}
{{- if ne (toString $rbac.create) "false" }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ include "semaphore-common.fullname" . }}-local-ranges
  labels:
    {{- include "semaphore-common.labels" . | nindent 4 }}
rules:
  - apiGroups: [""]
    resources: ["nodes"]
    verbs: ["list", "watch"]
  - apiGroups: ["networking.k8s.io"]
    resources: ["servicecidrs"]
    verbs: ["list", "watch"]
  - apiGroups: ["crd.projectcalico.org"]
    resources: ["ipamblocks"]
    verbs: ["list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ include "semaphore-common.fullname" . }}-local-ranges
  labels:
    {{- include "semaphore-common.labels" . | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ include "semaphore-common.fullname" . }}-local-ranges
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
