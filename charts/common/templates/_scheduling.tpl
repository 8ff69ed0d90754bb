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
  {{- with (include "semaphore-common.podScheduling" $c) }}
  {{- . | nindent 6 }}
  {{- end }}
  dict "ctx" $ "component" "service-mirror"
*/ -}}
{{- define "semaphore-common.podScheduling" -}}
{{- include "semaphore-common.podScheduling.items" . | trim -}}
{{- end -}}

{{- /* (internal) the keys of semaphore-common.podScheduling, with a leading newline */ -}}
{{- define "semaphore-common.podScheduling.items" -}}
{{- with .ctx.Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .ctx.Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .ctx.Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .ctx.Values.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
