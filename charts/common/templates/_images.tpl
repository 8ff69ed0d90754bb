{{- /*
semaphore-common.image: the container image reference
"<registry>/<repository>[:<tag>][@<digest>]".
  dict "ctx" $ "component" "service-mirror"
Reads (each optional; the component's own value wins over global):
  .Values.image.registry    else global.image.registry (default ghcr.io/kube-semaphore)
  .Values.image.repository  default "semaphore-<component>"
  .Values.image.tag         else global.image.tag, else .Chart.AppVersion
  .Values.image.digest      "sha256:..." appended after the tag when set
*/ -}}
{{- define "semaphore-common.image" -}}
{{- $g := (include "semaphore-common.global" . | fromYaml).image -}}
{{- $i := .ctx.Values.image | default dict -}}
{{- $registry := $i.registry | default $g.registry | trimSuffix "/" -}}
{{- $repository := $i.repository | default (printf "semaphore-%s" .component) -}}
{{- $tag := $i.tag | default $g.tag | default .ctx.Chart.AppVersion | toString -}}
{{- $ref := $repository -}}
{{- if $registry -}}{{- $ref = printf "%s/%s" $registry $repository -}}{{- end -}}
{{- if $tag -}}{{- $ref = printf "%s:%s" $ref $tag -}}{{- end -}}
{{- with $i.digest -}}{{- $ref = printf "%s@%s" $ref . -}}{{- end -}}
{{- $ref -}}
{{- end -}}

{{- /*
semaphore-common.imagePullPolicy: .Values.image.pullPolicy, else global.image.pullPolicy (default
IfNotPresent).
  dict "ctx" $ "component" "service-mirror"
*/ -}}
{{- define "semaphore-common.imagePullPolicy" -}}
{{- $i := .ctx.Values.image | default dict -}}
{{- $i.pullPolicy | default (include "semaphore-common.global" . | fromYaml).image.pullPolicy -}}
{{- end -}}

{{- /*
semaphore-common.imagePullSecrets: the pod spec's imagePullSecrets field from
global.imagePullSecrets ([{name: ...}]); renders nothing when there are none. Use at the pod
spec's indentation:
  {{- with (include "semaphore-common.imagePullSecrets" $c) }}
  {{- . | nindent 6 }}
  {{- end }}
  dict "ctx" $ "component" "service-mirror"
*/ -}}
{{- define "semaphore-common.imagePullSecrets" -}}
{{- with (include "semaphore-common.global" . | fromYaml).imagePullSecrets -}}
imagePullSecrets:
{{- toYaml . | nindent 2 }}
{{- end -}}
{{- end -}}
