{{- /*
Monitoring objects: a metrics Service, ServiceMonitor, PodMonitor, PrometheusRule and Grafana
dashboard ConfigMaps. Each is a YAML document starting with "---", or nothing when disabled.
They all take
  dict "ctx" $ "component" "service-mirror"
and read these values of the including chart (all optional, all disabled by default):
  serviceMonitor: {enabled, interval, scrapeTimeout, labels, relabelings, metricRelabelings}
  podMonitor:     {enabled, interval, scrapeTimeout, labels, relabelings, metricRelabelings}
  prometheusRule: {enabled, labels}
  dashboards:     {enabled, label (default grafana_dashboard), labelValue (default "1"),
                   namespace (default the release namespace), annotations}
Alerts come from the including chart's files/alerts/*.yaml (Prometheus rule files: each file's
"groups" are concatenated; files without groups, such as promtool tests, are skipped) and
dashboards from files/dashboards/*.json, copied there from alerts/ and dashboards/ by
`make generate`. When there are no such files, PrometheusRule and dashboards render nothing.
*/ -}}

{{- /*
semaphore-common.monitoring: every monitoring object below, in one call.
  dict "ctx" $ "component" "service-mirror"
*/ -}}
{{- define "semaphore-common.monitoring" -}}
{{- include "semaphore-common.metricsService" . }}
{{- include "semaphore-common.serviceMonitor" . }}
{{- include "semaphore-common.podMonitor" . }}
{{- include "semaphore-common.prometheusRule" . }}
{{- include "semaphore-common.dashboards" . }}
{{- end -}}

{{- /*
semaphore-common.metricsService: a ClusterIP Service "<fullname>-metrics" on the admin port
(named "admin"), only when serviceMonitor.enabled: a ServiceMonitor needs a Service to find the
pods, and nothing else needs one.
*/ -}}
{{- define "semaphore-common.metricsService" -}}
{{- $sm := .ctx.Values.serviceMonitor | default dict -}}
{{- if $sm.enabled }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ printf "%s-metrics" (include "semaphore-common.fullname" . | trunc 55 | trimSuffix "-") }}
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "semaphore-common.labels" . | nindent 4 }}
spec:
  type: ClusterIP
  selector:
    {{- include "semaphore-common.selectorLabels" . | nindent 4 }}
  ports:
    - name: admin
      port: {{ include "semaphore-common.adminPort" . }}
      targetPort: admin
      protocol: TCP
{{- end }}
{{- end -}}

{{- /*
(internal) The scrape settings ServiceMonitor endpoints and PodMonitor podMetricsEndpoints share,
from the values key named by "monitor" (serviceMonitor or podMonitor).
  dict "ctx" $ "component" "service-mirror" "monitor" "serviceMonitor"
*/ -}}
{{- define "semaphore-common.monitoring.endpoint" -}}
{{- $m := index .ctx.Values .monitor | default dict -}}
port: admin
path: /metrics
scheme: http
{{- with $m.interval }}
interval: {{ . }}
{{- end }}
{{- with $m.scrapeTimeout }}
scrapeTimeout: {{ . }}
{{- end }}
{{- with $m.relabelings }}
relabelings:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $m.metricRelabelings }}
metricRelabelings:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{- /* semaphore-common.serviceMonitor: a monitoring.coreos.com/v1 ServiceMonitor of the metrics Service. */ -}}
{{- define "semaphore-common.serviceMonitor" -}}
{{- $sm := .ctx.Values.serviceMonitor | default dict -}}
{{- if $sm.enabled }}
---
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: {{ include "semaphore-common.fullname" . }}
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "semaphore-common.labels" . | nindent 4 }}
    {{- with $sm.labels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  jobLabel: app.kubernetes.io/name
  namespaceSelector:
    matchNames:
      - {{ .ctx.Release.Namespace }}
  selector:
    matchLabels:
      {{- include "semaphore-common.selectorLabels" . | nindent 6 }}
  endpoints:
    - {{ include "semaphore-common.monitoring.endpoint" (dict "ctx" .ctx "component" .component "monitor" "serviceMonitor") | nindent 6 | trim }}
{{- end }}
{{- end -}}

{{- /* semaphore-common.podMonitor: a monitoring.coreos.com/v1 PodMonitor of the pods (no Service needed). */ -}}
{{- define "semaphore-common.podMonitor" -}}
{{- $pm := .ctx.Values.podMonitor | default dict -}}
{{- if $pm.enabled }}
---
apiVersion: monitoring.coreos.com/v1
kind: PodMonitor
metadata:
  name: {{ include "semaphore-common.fullname" . }}
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "semaphore-common.labels" . | nindent 4 }}
    {{- with $pm.labels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  jobLabel: app.kubernetes.io/name
  namespaceSelector:
    matchNames:
      - {{ .ctx.Release.Namespace }}
  selector:
    matchLabels:
      {{- include "semaphore-common.selectorLabels" . | nindent 6 }}
  podMetricsEndpoints:
    - {{ include "semaphore-common.monitoring.endpoint" (dict "ctx" .ctx "component" .component "monitor" "podMonitor") | nindent 6 | trim }}
{{- end }}
{{- end -}}

{{- /*
semaphore-common.prometheusRule: a monitoring.coreos.com/v1 PrometheusRule holding the groups of
every files/alerts/*.yaml; nothing when disabled or when no file has groups.
*/ -}}
{{- define "semaphore-common.prometheusRule" -}}
{{- $pr := .ctx.Values.prometheusRule | default dict -}}
{{- if $pr.enabled }}
{{- $groups := list -}}
{{- range $path, $_ := .ctx.Files.Glob "files/alerts/*.yaml" }}
{{- $doc := $.ctx.Files.Get $path | fromYaml -}}
{{- if hasKey $doc "Error" }}
{{- fail (printf "%s: %s" $path $doc.Error) }}
{{- end }}
{{- range $doc.groups }}{{ $groups = append $groups . }}{{ end -}}
{{- end }}
{{- if $groups }}
---
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: {{ include "semaphore-common.fullname" . }}
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "semaphore-common.labels" . | nindent 4 }}
    {{- with $pr.labels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  groups:
    {{- toYaml $groups | nindent 4 }}
{{- end }}
{{- end }}
{{- end -}}

{{- /*
semaphore-common.dashboards: one ConfigMap "<fullname>-dashboard-<file name>" per
files/dashboards/*.json, labelled for the Grafana sidecar (dashboards.label: dashboards.labelValue);
nothing when disabled or when there are no files.
*/ -}}
{{- define "semaphore-common.dashboards" -}}
{{- $d := .ctx.Values.dashboards | default dict -}}
{{- if $d.enabled }}
{{- $top := . -}}
{{- range $path, $_ := .ctx.Files.Glob "files/dashboards/*.json" }}
{{- $base := base $path | trimSuffix ".json" | lower | replace "_" "-" | replace "." "-" }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ printf "%s-dashboard-%s" (include "semaphore-common.fullname" $top) $base | trunc 253 | trimSuffix "-" }}
  namespace: {{ $d.namespace | default $top.ctx.Release.Namespace }}
  labels:
    {{- include "semaphore-common.labels" $top | nindent 4 }}
    {{ $d.label | default "grafana_dashboard" }}: {{ $d.labelValue | default "1" | toString | quote }}
  {{- with $d.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
data:
  {{ base $path }}: |-
    {{- $top.ctx.Files.Get $path | nindent 4 }}
{{- end }}
{{- end }}
{{- end -}}
