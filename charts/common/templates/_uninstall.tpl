{{- /*
semaphore-common.uninstallHook: what makes `helm uninstall` leave nothing the component made.
Helm deletes only the objects it rendered; what the controller made (mirrors, GlobalNetworkSets,
WireGuard devices, Node annotations, ...) would stay. So, before Helm deletes anything
(pre-delete hooks), a Job runs the component's own image with args ["uninstall-hook"]: it patches
the workload so that its container gets SEMAPHORE_UNINSTALL=true (a Deployment also strategy
Recreate, a DaemonSet maxUnavailable 100%), whose pods remove what the component made and then
report ready, and waits until that rollout is complete, for SEMAPHORE_UNINSTALL_TIMEOUT; then
Helm deletes the release. The Job's env:
  SEMAPHORE_UNINSTALL_WORKLOAD   "deployment/<workload>" or "daemonset/<workload>"
  SEMAPHORE_UNINSTALL_CONTAINER  the container's name in the workload's pod template
  SEMAPHORE_UNINSTALL_NAMESPACE  the release namespace (downward API, metadata.namespace)
  SEMAPHORE_UNINSTALL_TIMEOUT    .Values.uninstall.timeout (a Go duration)
Rendered, as YAML documents starting with "---", unless .Values.uninstall.cleanUp is false:
a ServiceAccount, a Role that may get and patch that one workload and nothing else, its
RoleBinding (hook weight -10, created first) and the Job "<fullname>-uninstall" (weight 0;
restartPolicy Never, backoffLimit 1, activeDeadlineSeconds the timeout + 60 s, non-root and
read-only like every container, the component's nodeSelector and tolerations). Whatever
rbac.create says: the hook's identity is its own. Each is deleted once every hook succeeded, and
before the hook is made again; a failed Job stays for `kubectl logs`.
The hook objects' labels are the common labels with app.kubernetes.io/component "uninstall" and
app.kubernetes.io/name "<name>-uninstall": the component's selectors (name and instance) select
the component's pods, and must not select the hook's (a Service, PodDisruptionBudget,
NetworkPolicy or monitor of the component, or its DaemonSet).
  dict "ctx" $ "component" "wireguard" "kind" "DaemonSet" "workload" <its name> "container" "wireguard"
*/ -}}
{{- define "semaphore-common.uninstallHook" -}}
{{- $u := .ctx.Values.uninstall | default dict -}}
{{- if ne (toString $u.cleanUp) "false" }}
{{- $name := include "semaphore-common.uninstallHook.name" . -}}
{{- $timeout := $u.timeout | default "5m" | toString -}}
{{- $seconds := include "semaphore-common.uninstallHook.seconds" $timeout | int -}}
{{- if le $seconds 0 -}}
{{- fail (printf "uninstall.timeout: %q is not a positive duration (Go syntax, e.g. 5m)" $timeout) -}}
{{- end -}}
{{- $labels := include "semaphore-common.uninstallHook.labels" . -}}
{{- $hook := dict "labels" $labels "namespace" .ctx.Release.Namespace "weight" "-10" -}}
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ $name }}
  {{- include "semaphore-common.uninstallHook.metadata" $hook | nindent 2 }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ $name }}
  {{- include "semaphore-common.uninstallHook.metadata" $hook | nindent 2 }}
rules:
  - apiGroups: ["apps"]
    resources: [{{ printf "%ss" (lower .kind) | quote }}]
    resourceNames: [{{ .workload | quote }}]
    verbs: ["get", "patch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ $name }}
  {{- include "semaphore-common.uninstallHook.metadata" $hook | nindent 2 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ $name }}
subjects:
  - kind: ServiceAccount
    name: {{ $name }}
    namespace: {{ .ctx.Release.Namespace }}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ $name }}
  {{- include "semaphore-common.uninstallHook.metadata" (merge (dict "weight" "0") $hook) | nindent 2 }}
spec:
  backoffLimit: 1
  activeDeadlineSeconds: {{ add $seconds 60 }}
  template:
    metadata:
      labels:
        {{- $labels | nindent 8 }}
    spec:
      serviceAccountName: {{ $name }}
      restartPolicy: Never
      enableServiceLinks: false
      {{- with (include "semaphore-common.imagePullSecrets" .) }}
      {{- . | nindent 6 }}
      {{- end }}
      securityContext:
        {{- include "semaphore-common.podSecurityContext" (dict "ctx" .ctx "component" .component) | nindent 8 }}
      {{- with .ctx.Values.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .ctx.Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: uninstall-hook
          image: {{ include "semaphore-common.image" . | quote }}
          imagePullPolicy: {{ include "semaphore-common.imagePullPolicy" . }}
          args: ["uninstall-hook"]
          env:
            - name: SEMAPHORE_UNINSTALL_WORKLOAD
              value: {{ printf "%s/%s" (lower .kind) .workload | quote }}
            - name: SEMAPHORE_UNINSTALL_CONTAINER
              value: {{ .container | quote }}
            - name: SEMAPHORE_UNINSTALL_NAMESPACE
              valueFrom:
                fieldRef:
                  fieldPath: metadata.namespace
            - name: SEMAPHORE_UNINSTALL_TIMEOUT
              value: {{ $timeout | quote }}
          resources:
            requests:
              cpu: 10m
              memory: 32Mi
            limits:
              memory: 64Mi
          securityContext:
            {{- include "semaphore-common.containerSecurityContext" (dict "ctx" .ctx "component" .component) | nindent 12 }}
{{- end }}
{{- end -}}

{{- /*
(internal) the hook objects' name: "<fullname>-uninstall", a valid Job name (63 characters at
most). A fullname too long for that is cut and told apart by a hash of it: the components'
fullnames of a long release name share their first characters.
*/ -}}
{{- define "semaphore-common.uninstallHook.name" -}}
{{- $fullname := include "semaphore-common.fullname" . -}}
{{- if gt (len $fullname) 53 -}}
{{- $fullname = printf "%s-%s" ($fullname | trunc 42 | trimSuffix "-") (sha256sum $fullname | trunc 10) -}}
{{- end -}}
{{- printf "%s-uninstall" $fullname -}}
{{- end -}}

{{- /* (internal) the hook objects' labels: see semaphore-common.uninstallHook */ -}}
{{- define "semaphore-common.uninstallHook.labels" -}}
{{- $labels := include "semaphore-common.labels" . | fromYaml -}}
{{- $_ := set $labels "app.kubernetes.io/name" (printf "%s-uninstall" (include "semaphore-common.name" . | trunc 53 | trimSuffix "-")) -}}
{{- $_ = set $labels "app.kubernetes.io/component" "uninstall" -}}
{{- toYaml $labels -}}
{{- end -}}

{{- /*
(internal) a hook object's namespace, labels and annotations (keys of its metadata):
  dict "labels" <YAML> "namespace" <release namespace> "weight" "-10"
*/ -}}
{{- define "semaphore-common.uninstallHook.metadata" -}}
namespace: {{ .namespace }}
labels:
  {{- .labels | nindent 2 }}
annotations:
  helm.sh/hook: pre-delete
  helm.sh/hook-weight: {{ .weight | quote }}
  helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
{{- end -}}

{{- /*
(internal) the whole seconds (rounded up) of a Go duration such as "5m", "1h30m" or "90s";
0 for one it cannot read (values.schema.json checks the form).
  the duration, a string
*/ -}}
{{- define "semaphore-common.uninstallHook.seconds" -}}
{{- $perUnit := dict "h" 3600.0 "m" 60.0 "s" 1.0 "ms" 0.001 "us" 0.000001 "µs" 0.000001 "ns" 0.000000001 -}}
{{- $total := 0.0 -}}
{{- if regexMatch "^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$" . -}}
{{- range $part := regexFindAll "[0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h)" . -1 -}}
{{- $number := regexFind "^[0-9]+(\\.[0-9]+)?" $part -}}
{{- $unit := trimPrefix $number $part -}}
{{- $total = addf $total (mulf (float64 $number) (get $perUnit $unit)) -}}
{{- end -}}
{{- end -}}
{{- ceil $total | int -}}
{{- end -}}
