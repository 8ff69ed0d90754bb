{{- /*
Monitoring objects: a metrics Service, ServiceMonitor, PodMonitor, PrometheusRule and Grafana
dashboard ConfigMaps. Each is a YAML document starting with "---", or nothing when disabled.
They all take
  dict "ctx" $ "component" "service-mirror"
  dict "ctx" $ "component" "wireguard" "portlessContainer" "wireguard"
(portlessContainer: the name of the component's container when it declares no ports, as
wireguard's does (see its DaemonSet); semaphore-common.podMonitor then finds the admin port by
relabeling instead of by its name) and read these values of the including chart (all optional,
all off by default):
  serviceMonitor: {enabled, interval, scrapeTimeout, labels, relabelings, metricRelabelings}
  podMonitor:     {enabled, interval, scrapeTimeout, labels, relabelings, metricRelabelings}
  prometheusRule: {enabled, labels}
  dashboards:     {enabled, label, labelValue, namespace (default the release namespace),
                   annotations}
and global.monitoring (semaphore-common.global): {enabled, kind, labels, dashboards: {label
(default grafana_dashboard), labelValue (default "1"), annotations}}, the switch that turns them
all on at once (semaphore-common.monitoring.on says when an object is on). Every object carries
global.monitoring.labels and then its own key's labels over them; the dashboard ConfigMaps the
sidecar label (the chart's dashboards.label/labelValue, else global's) and the annotations of
both (the chart's over global's).
Alerts come from the including chart's files/alerts/*.yaml (Prometheus rule files: each file's
"groups" are concatenated; files without groups, such as promtool tests, are skipped) and
dashboards from files/dashboards/*.json, copied there from alerts/ and dashboards/ by
`make generate`. When there are no such files, PrometheusRule and dashboards render nothing.
*/ -}}

{{- /*
semaphore-common.monitoring: every monitoring object below, in one call.
  dict "ctx" $ "component" "service-mirror" ["portlessContainer" <its container>]
*/ -}}
{{- define "semaphore-common.monitoring" -}}
{{- include "semaphore-common.metricsService" . }}
{{- include "semaphore-common.serviceMonitor" . }}
{{- include "semaphore-common.podMonitor" . }}
{{- include "semaphore-common.prometheusRule" . }}
{{- include "semaphore-common.dashboards" . }}
{{- end -}}

{{- /*
(internal) semaphore-common.monitoring.on: "true" when the monitoring object of the values key "key"
(serviceMonitor, podMonitor, prometheusRule or dashboards) is on, else "". The key's own
enabled decides when it is set, true or false; unset (null, the default), global.monitoring.enabled
does. Of the two monitors, the switch turns on the kind global.monitoring.kind names, and only
while the chart sets neither monitor's enabled: a component that picks its monitor itself is
scraped by that one alone, never twice.
  dict "ctx" $ "component" "service-mirror" "key" "serviceMonitor"
*/ -}}
{{- define "semaphore-common.monitoring.on" -}}
{{- $own := index .ctx.Values .key | default dict -}}
{{- $mon := (include "semaphore-common.global" . | fromYaml).monitoring -}}
{{- if not (kindIs "invalid" $own.enabled) -}}
{{- if $own.enabled }}true{{ end -}}
{{- else if $mon.enabled -}}
{{- $monitors := dict "serviceMonitor" "ServiceMonitor" "podMonitor" "PodMonitor" -}}
{{- if not (hasKey $monitors .key) -}}
true
{{- else -}}
{{- $chosen := true -}}
{{- range $key, $_ := $monitors -}}
{{- if not (kindIs "invalid" (index $.ctx.Values $key | default dict).enabled) }}{{ $chosen = false }}{{ end -}}
{{- end -}}
{{- if and $chosen (eq $mon.kind (index $monitors .key)) }}true{{ end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- /*
(internal) The labels of a monitoring object of the values key "key": global.monitoring.labels,
the key's own labels over them, then the "add" dict (the sidecar label) over both; the standard
labels (semaphore-common.labels) stay as they are.
  dict "ctx" $ "component" "service-mirror" "key" "serviceMonitor" ["add" (dict ...)]
*/ -}}
{{- define "semaphore-common.monitoring.labels" -}}
{{- $own := index .ctx.Values .key | default dict -}}
{{- $mon := (include "semaphore-common.global" . | fromYaml).monitoring -}}
{{- $extra := merge (dict) (.add | default dict) ($own.labels | default dict) $mon.labels -}}
{{- include "semaphore-common.labels" (dict "ctx" .ctx "component" .component "extra" $extra) -}}
{{- end -}}

{{- /*
semaphore-common.metricsService: a ClusterIP Service "<fullname>-metrics" on the admin port
(named "admin"), only while the ServiceMonitor is on: a ServiceMonitor needs a Service to find
the pods, and nothing else needs one. Its targetPort is the port's number, which needs no
container port of that name (wireguard's container declares none).
*/ -}}
{{- define "semaphore-common.metricsService" -}}
{{- if include "semaphore-common.monitoring.on" (dict "ctx" .ctx "component" .component "key" "serviceMonitor") }}
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
      targetPort: {{ include "semaphore-common.adminPort" . }}
      protocol: TCP
{{- end }}
{{- end -}}

{{- /*
(internal) The scrape settings ServiceMonitor endpoints and PodMonitor podMetricsEndpoints share,
from the values key named by "monitor" (serviceMonitor or podMonitor): the port named "admin"
(the metrics Service's, or the container's), then the values' relabelings. With
"portlessContainer" (a PodMonitor of a container that declares no ports) there is no port to
name: Prometheus' pod discovery gives such a pod one target per container, at the pod IP
without a port, and semaphore-common.monitoring.podAddress's relabelings, before the values'
own, keep that container's target and set its address.
  dict "ctx" $ "component" "service-mirror" "monitor" "serviceMonitor" ["portlessContainer" <name>]
*/ -}}
{{- define "semaphore-common.monitoring.endpoint" -}}
{{- $m := index .ctx.Values .monitor | default dict -}}
{{- if not .portlessContainer }}
port: admin
{{- end }}
path: /metrics
scheme: http
{{- with $m.interval }}
interval: {{ . }}
{{- end }}
{{- with $m.scrapeTimeout }}
scrapeTimeout: {{ . }}
{{- end }}
{{- if or .portlessContainer $m.relabelings }}
relabelings:
  {{- if .portlessContainer }}
  {{- include "semaphore-common.monitoring.podAddress" . | nindent 2 }}
  {{- end }}
  {{- with $m.relabelings }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}
{{- with $m.metricRelabelings }}
metricRelabelings:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{- /*
(internal) The relabelings (list items) that scrape a container declaring no ports: keep the
target of the container named "portlessContainer" (a pod's other containers, such as an injected
sidecar, would be the same address scraped twice), and set __address__ to the pod IP and the admin
port, an IPv6 pod IP in brackets. Prometheus' regular expressions match the whole value: an IPv4
address has no ":", an IPv6 one has.
  dict "ctx" $ "component" "wireguard" "portlessContainer" "wireguard"
*/ -}}
{{- define "semaphore-common.monitoring.podAddress" -}}
{{- $port := include "semaphore-common.adminPort" . -}}
- sourceLabels: [__meta_kubernetes_pod_container_name]
  regex: {{ .portlessContainer | quote }}
  action: keep
- sourceLabels: [__meta_kubernetes_pod_ip]
  regex: "([^:]+)"
  targetLabel: __address__
  replacement: {{ printf "${1}:%s" $port | quote }}
  action: replace
- sourceLabels: [__meta_kubernetes_pod_ip]
  regex: "(.+:.+)"
  targetLabel: __address__
  replacement: {{ printf "[${1}]:%s" $port | quote }}
  action: replace
{{- end -}}

{{- /* semaphore-common.serviceMonitor: a monitoring.coreos.com/v1 ServiceMonitor of the metrics Service. */ -}}
{{- define "semaphore-common.serviceMonitor" -}}
{{- $on := dict "ctx" .ctx "component" .component "key" "serviceMonitor" -}}
{{- if include "semaphore-common.monitoring.on" $on }}
---
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: {{ include "semaphore-common.fullname" . }}
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "semaphore-common.monitoring.labels" $on | nindent 4 }}
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

{{- /*
semaphore-common.podMonitor: a monitoring.coreos.com/v1 PodMonitor of the pods (no Service
needed): of their port named "admin", or, with "portlessContainer", of that container at the pod
IP and the admin port (see semaphore-common.monitoring.endpoint).
*/ -}}
{{- define "semaphore-common.podMonitor" -}}
{{- $on := dict "ctx" .ctx "component" .component "key" "podMonitor" -}}
{{- if include "semaphore-common.monitoring.on" $on }}
---
apiVersion: monitoring.coreos.com/v1
kind: PodMonitor
metadata:
  name: {{ include "semaphore-common.fullname" . }}
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "semaphore-common.monitoring.labels" $on | nindent 4 }}
spec:
  jobLabel: app.kubernetes.io/name
  namespaceSelector:
    matchNames:
      - {{ .ctx.Release.Namespace }}
  selector:
    matchLabels:
      {{- include "semaphore-common.selectorLabels" . | nindent 6 }}
  podMetricsEndpoints:
    - {{ include "semaphore-common.monitoring.endpoint" (dict "ctx" .ctx "component" .component "monitor" "podMonitor" "portlessContainer" .portlessContainer) | nindent 6 | trim }}
{{- end }}
{{- end -}}

{{- /*
semaphore-common.prometheusRule: a monitoring.coreos.com/v1 PrometheusRule holding the groups of
every files/alerts/*.yaml; nothing when off or when no file has groups.
*/ -}}
{{- define "semaphore-common.prometheusRule" -}}
{{- $on := dict "ctx" .ctx "component" .component "key" "prometheusRule" -}}
{{- if include "semaphore-common.monitoring.on" $on }}
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
    {{- include "semaphore-common.monitoring.labels" $on | nindent 4 }}
spec:
  groups:
    {{- toYaml $groups | nindent 4 }}
{{- end }}
{{- end }}
{{- end -}}

{{- /*
semaphore-common.dashboards: one ConfigMap "<fullname>-dashboard-<file name>" per
files/dashboards/*.json, labelled for the Grafana sidecar (dashboards.label: dashboards.labelValue,
else global.monitoring.dashboards'); nothing when off or when there are no files.
*/ -}}
{{- define "semaphore-common.dashboards" -}}
{{- $d := .ctx.Values.dashboards | default dict -}}
{{- $g := (include "semaphore-common.global" . | fromYaml).monitoring.dashboards -}}
{{- $sidecar := dict ($d.label | default $g.label) ($d.labelValue | default $g.labelValue | toString) -}}
{{- $on := dict "ctx" .ctx "component" .component "key" "dashboards" "add" $sidecar -}}
{{- if include "semaphore-common.monitoring.on" $on }}
{{- $annotations := merge (dict) ($d.annotations | default dict) $g.annotations -}}
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
    {{- include "semaphore-common.monitoring.labels" $on | nindent 4 }}
  {{- with $annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
data:
  {{ base $path }}: |-
    {{- $top.ctx.Files.Get $path | nindent 4 }}
{{- end }}
{{- end }}
{{- end -}}
