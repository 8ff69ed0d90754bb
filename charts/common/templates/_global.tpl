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
{{- end -}}
