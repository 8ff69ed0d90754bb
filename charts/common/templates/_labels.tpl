{{- /*
semaphore-common.selectorLabels: the labels that select the component's pods (immutable in a
Deployment/DaemonSet selector: never add to them).
  dict "ctx" $ "component" "service-mirror"
*/ -}}
{{- define "semaphore-common.selectorLabels" -}}
app.kubernetes.io/name: {{ include "semaphore-common.name" . }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
{{- end -}}

{{- /*
semaphore-common.labels: the labels of every object: selector labels, app.kubernetes.io/*
(component only with a component), helm.sh/chart, and the common labels, which cannot override
the standard ones. The common labels are the chart's own .Values.commonLabels where it has that
key (semaphore-remote), otherwise .Values.global.commonLabels (the umbrella and its subcharts).
An optional "extra" dict (the monitoring objects' labels) goes over the common labels and, like
them, under the standard ones.
  dict "ctx" $ "component" "service-mirror" ["extra" (dict "release" "prometheus")]
*/ -}}
{{- define "semaphore-common.labels" -}}
{{- $common := (include "semaphore-common.global" . | fromYaml).commonLabels -}}
{{- if hasKey .ctx.Values "commonLabels" -}}
{{- $common = .ctx.Values.commonLabels | default dict -}}
{{- end -}}
{{- $labels := dict -}}
{{- range $k, $v := merge (dict) (.extra | default dict) $common -}}
{{- $_ := set $labels $k (toString $v) -}}
{{- end -}}
{{- $_ := set $labels "helm.sh/chart" (include "semaphore-common.chart" .) -}}
{{- $_ := set $labels "app.kubernetes.io/name" (include "semaphore-common.name" .) -}}
{{- $_ := set $labels "app.kubernetes.io/instance" .ctx.Release.Name -}}
{{- with .component -}}
{{- $_ := set $labels "app.kubernetes.io/component" . -}}
{{- end -}}
{{- $_ := set $labels "app.kubernetes.io/part-of" "semaphore" -}}
{{- $_ := set $labels "app.kubernetes.io/managed-by" .ctx.Release.Service -}}
{{- with .ctx.Chart.AppVersion -}}
{{- $_ := set $labels "app.kubernetes.io/version" (toString . | trunc 63) -}}
{{- end -}}
{{- toYaml $labels -}}
{{- end -}}
