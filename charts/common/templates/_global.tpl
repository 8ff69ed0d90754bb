{{- /*
semaphore-common.global: .Values.global with every key the charts read set, defaults filled in,
as YAML (use: (include "semaphore-common.global" $c | fromYaml)). A subchart installed alone may
have no global at all.
  dict "ctx" $ "component" "service-mirror"
*/ -}}
{{- define "semaphore-common.global" -}}
{{- $g := .ctx.Values.global | default dict -}}
{{- $img := $g.image | default dict -}}
clusterName: {{ $g.clusterName | default "" | toString | quote }}
remotes: {{ $g.remotes | default list | toJson }}
image:
  registry: {{ $img.registry | default "ghcr.io/kube-semaphore" | quote }}
  tag: {{ $img.tag | default "" | toString | quote }}
  pullPolicy: {{ $img.pullPolicy | default "IfNotPresent" | quote }}
imagePullSecrets: {{ $g.imagePullSecrets | default list | toJson }}
commonLabels: {{ $g.commonLabels | default dict | toJson }}
adoptOriginal: {{ eq (toString $g.adoptOriginal) "true" }}
{{- $mon := $g.monitoring | default dict }}
{{- $dash := $mon.dashboards | default dict }}
monitoring:
  enabled: {{ eq (toString $mon.enabled) "true" }}
  kind: {{ $mon.kind | default "ServiceMonitor" | quote }}
  labels: {{ $mon.labels | default dict | toJson }}
  dashboards:
    label: {{ $dash.label | default "grafana_dashboard" | quote }}
    labelValue: {{ $dash.labelValue | default "1" | toString | quote }}
    annotations: {{ $dash.annotations | default dict | toJson }}
{{- end -}}
