{{- /*
semaphore-common.serviceAccount: the ServiceAccount, as a YAML document starting with "---",
when .Values.serviceAccount.create (default true); annotations from serviceAccount.annotations.
  dict "ctx" $ "component" "service-mirror"
*/ -}}
{{- define "semaphore-common.serviceAccount" -}}
{{- $sa := .ctx.Values.serviceAccount | default dict -}}
{{- if ne (toString $sa.create) "false" }}
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "semaphore-common.serviceAccountName" . }}
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "semaphore-common.labels" . | nindent 4 }}
  {{- with $sa.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
{{- end -}}

{{- /*
semaphore-common.leaderElectionRBAC: a Role + RoleBinding "<fullname>-leader-election" in the
release namespace (YAML documents starting with "---") that let the ServiceAccount run leader
election on its own Lease only: create (which RBAC cannot limit by name) and get/update of the
Lease named <fullname> (SEMAPHORE_LEADER_ELECT_LEASE_NAME), and its delete: in uninstall mode
(SEMAPHORE_UNINSTALL, semaphore-common.uninstallHook) the component removes its Lease with the rest
of what it made. No Events: the election records none (the Lease lock has no event recorder). Renders nothing unless .Values.rbac.create (default
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
    verbs: ["get", "update", "delete"]
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
