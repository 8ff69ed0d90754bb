{{- /*
semaphore-common.name: app.kubernetes.io/name. nameOverride when set; otherwise
"semaphore-<component>", or, without a component, the chart's name (semaphore-remote).
Truncated to 63 characters.
  dict "ctx" $ "component" "service-mirror"
*/ -}}
{{- define "semaphore-common.name" -}}
{{- $name := "" -}}
{{- if .component -}}
{{- $name = printf "semaphore-%s" .component -}}
{{- else -}}
{{- $name = .ctx.Chart.Name -}}
{{- end -}}
{{- default $name .ctx.Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- /*
semaphore-common.fullname: the name of the chart's objects. fullnameOverride wins; otherwise
"<release>-<component>" ("semaphore-service-mirror" for release "semaphore"), or the release
name alone when it already contains the component's name. Without a component the chart's name
(semaphore-common.name, so nameOverride too) takes the component's place: "<release>-semaphore-remote",
or the release name alone for the usual `helm install semaphore-remote ...`. Truncated to 63
characters.
  dict "ctx" $ "component" "service-mirror"
*/ -}}
{{- define "semaphore-common.fullname" -}}
{{- if .ctx.Values.fullnameOverride -}}
{{- .ctx.Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $base := .component -}}
{{- if not $base -}}
{{- $base = include "semaphore-common.name" . -}}
{{- end -}}
{{- if contains $base .ctx.Release.Name -}}
{{- .ctx.Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .ctx.Release.Name $base | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- /*
semaphore-common.chart: "<chart>-<version>" for the helm.sh/chart label.
  dict "ctx" $ "component" "service-mirror"
*/ -}}
{{- define "semaphore-common.chart" -}}
{{- printf "%s-%s" .ctx.Chart.Name .ctx.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- /*
semaphore-common.serviceAccountName: the ServiceAccount the pods run as: serviceAccount.name,
default the fullname when serviceAccount.create; required when not created.
  dict "ctx" $ "component" "service-mirror"
Reads .Values.serviceAccount.{create (default true), name}.
*/ -}}
{{- define "semaphore-common.serviceAccountName" -}}
{{- $sa := .ctx.Values.serviceAccount | default dict -}}
{{- if ne (toString $sa.create) "false" -}}
{{- $sa.name | default (include "semaphore-common.fullname" .) -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" $sa.name -}}
{{- end -}}
{{- end -}}
