{{/*
Name, fullname and labels come from the semaphore-common library (charts/common), called as
  include "semaphore-common.fullname" (dict "ctx" $)
without a component: the objects are named after this chart, "<release>-semaphore-remote" or the
release name alone when it already contains the chart's name (the usual
`helm install semaphore-remote ...`); the common labels are .Values.commonLabels.
*/}}

{{/*
The consuming cluster's ServiceAccount (and the stem of its token Secret). Fixed rather than
derived from the release so that NOTES.txt, docs and the consuming side can name it.
*/}}
{{- define "semaphore-remote.serviceAccountName" -}}
semaphore-remote-{{ . }}
{{- end }}

{{/*
The name of a consumer's token Secret of a generation: semaphore-remote-<name>-token for
generation 1 (the first, and every release before generations existed), with -<generation>
appended after it. Rotating the token is moving to the next generation (docs/operations.md).
  list <consumer name> <generation>
*/}}
{{- define "semaphore-remote.tokenSecretName" -}}
{{- $gen := index . 1 | int -}}
semaphore-remote-{{ index . 0 }}-token{{ if gt $gen 1 }}-{{ $gen }}{{ end }}
{{- end }}

{{/*
Stops rendering on values the schema cannot express: a ClusterRole without rules, a consumer
named twice (the schema's uniqueItems also catches this) or named like this cluster, or a
consumer granted Calico IPAM blocks (calicoIPAM), which only semaphore-wireguard reads, while
components.wireguard is off, or whose binding to the IPAM role would take the name of another
consumer's binding (consumers "x" and "x-calico-ipam").
*/}}
{{- define "semaphore-remote.validate" -}}
{{- $c := .Values.components }}
{{- if not (or $c.serviceMirror $c.policy $c.wireguard) }}
{{- fail "components: enable at least one of serviceMirror, policy and wireguard (with none, the consumers could read nothing)" }}
{{- end }}
{{- $seen := dict }}
{{- range .Values.consumers }}
{{- if hasKey $seen .name }}
{{- fail (printf "consumers: %q is listed more than once" .name) }}
{{- end }}
{{- $_ := set $seen .name true }}
{{- if and .calicoIPAM (not $c.wireguard) }}
{{- fail (printf "consumers: %q has calicoIPAM: true, but components.wireguard is false: only semaphore-wireguard reads Calico IPAM blocks (podCIDRsFrom: calico-ipam); enable components.wireguard or drop calicoIPAM" .name) }}
{{- end }}
{{- if and $.Values.clusterName (eq .name $.Values.clusterName) }}
{{- fail (printf "consumers: %q is this cluster's own name (clusterName); a cluster does not read from itself" .name) }}
{{- end }}
{{- end }}
{{- range .Values.consumers }}
{{- $other := printf "%s-calico-ipam" .name }}
{{- if and .calicoIPAM (hasKey $seen $other) }}
{{- fail (printf "consumers: %q has calicoIPAM: true, and its ClusterRoleBinding to the IPAM role would take the name of consumer %q's binding; rename one of them" .name $other) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The consumers with calicoIPAM: true, as a YAML list of names (fromYamlArray), in list order.
*/}}
{{- define "semaphore-remote.calicoIPAMConsumers" -}}
{{- $names := list }}
{{- range .Values.consumers }}
{{- if .calicoIPAM }}
{{- $names = append $names .name }}
{{- end }}
{{- end }}
{{- toYaml $names }}
{{- end }}

{{/*
The consumers' names, one per line, in list order (the link ConfigMap's `consumers`).
*/}}
{{- define "semaphore-remote.consumerNames" -}}
{{- $names := list }}
{{- range .Values.consumers }}
{{- $names = append $names .name }}
{{- end }}
{{- join "\n" $names }}
{{- end }}
