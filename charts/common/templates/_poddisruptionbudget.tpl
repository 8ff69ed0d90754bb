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
