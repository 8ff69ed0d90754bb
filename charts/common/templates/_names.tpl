{{- /*
semaphore-common: the helpers every Semaphore subchart uses. Each template documents its
parameters above its definition. Index:
  _names.tpl      name, fullname, chart, selectorLabels, labels, global, validate,
                  serviceAccountName, serviceAccount
  _image.tpl      image, imagePullPolicy, imagePullSecrets
  _remotes.tpl    remotesDir, remoteSecretName, remoteSecrets, remotesChecksum, remoteVolumes,
                  remoteVolumeMounts
  _env.tpl        env (shared variables), leaderElectionEnv, extraEnv
  _pod.tpl        adminPort, podSecurityContext, containerSecurityContext, adminContainerPort, probes
  _workload.tpl   podDisruptionBudget, networkPolicy, leaderElectionRBAC, localRangesRBAC, affinity,
                  podScheduling
  _monitoring.tpl monitoring (= metricsService + serviceMonitor + podMonitor + prometheusRule +
                  dashboards)
A component's templates look like service-mirror's (charts/service-mirror/templates).

Most templates take a dict with two keys:
  ctx        the including chart's root context ($)
  component  the component's fixed name: "service-mirror", "policy" or "wireguard".
             It is passed explicitly because .Chart.Name is the alias (serviceMirror) when the
             subchart is used through the umbrella, and an alias is not a valid object name.
The others take $ itself, as noted. Values come from ctx: the component's own keys and
.Values.global.* (with defaults, so that a subchart installed alone works).
*/ -}}

{{- /*
semaphore-common.name: the component's name, "semaphore-<component>" unless nameOverride is set;
used as app.kubernetes.io/name.
  dict "ctx" $ "component" "service-mirror"
*/ -}}
{{- define "semaphore-common.name" -}}
{{- default (printf "semaphore-%s" .component) .ctx.Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- /*
semaphore-common.fullname: the name of the component's objects. fullnameOverride wins; otherwise
"<release>-<component>" ("semaphore-service-mirror" for release "semaphore"), or the release
name alone when it already contains the component's name. Truncated to 63 characters.
  dict "ctx" $ "component" "service-mirror"
*/ -}}
{{- define "semaphore-common.fullname" -}}
{{- if .ctx.Values.fullnameOverride -}}
{{- .ctx.Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains .component .ctx.Release.Name -}}
{{- .ctx.Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .ctx.Release.Name .component | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- /*
semaphore-common.chart: "<chart>-<version>" for the helm.sh/chart label.
  $ (the including chart's root context)
*/ -}}
{{- define "semaphore-common.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

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
semaphore-common.labels: the labels of every object: selector labels, app.kubernetes.io/*,
helm.sh/chart and .Values.global.commonLabels (which cannot override the standard ones).
  dict "ctx" $ "component" "service-mirror"
*/ -}}
{{- define "semaphore-common.labels" -}}
{{- $labels := dict -}}
{{- range $k, $v := (include "semaphore-common.global" .ctx | fromYaml).commonLabels -}}
{{- $_ := set $labels $k (toString $v) -}}
{{- end -}}
{{- $_ := set $labels "helm.sh/chart" (include "semaphore-common.chart" .ctx) -}}
{{- $_ := set $labels "app.kubernetes.io/name" (include "semaphore-common.name" .) -}}
{{- $_ := set $labels "app.kubernetes.io/instance" .ctx.Release.Name -}}
{{- $_ := set $labels "app.kubernetes.io/component" .component -}}
{{- $_ := set $labels "app.kubernetes.io/part-of" "semaphore" -}}
{{- $_ := set $labels "app.kubernetes.io/managed-by" .ctx.Release.Service -}}
{{- with .ctx.Chart.AppVersion -}}
{{- $_ := set $labels "app.kubernetes.io/version" (toString . | trunc 63) -}}
{{- end -}}
{{- toYaml $labels -}}
{{- end -}}

{{- /*
semaphore-common.global: .Values.global with every key the charts read set, defaults filled in,
as YAML (use: (include "semaphore-common.global" $ | fromYaml)). A subchart installed alone may
have no global at all.
  $ (the including chart's root context)
*/ -}}
{{- define "semaphore-common.global" -}}
{{- $g := .Values.global | default dict -}}
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

{{- /*
semaphore-common.validate: fails rendering, with a message naming the value, on what the schema
cannot express: a missing or invalid global.clusterName, remote names listed twice or equal to
the cluster name, a remote without podRanges that does not opt out (allowAnyPodAddress). Renders nothing. Call it once from any template of the component.
  $ (the including chart's root context)
*/ -}}
{{- define "semaphore-common.validate" -}}
{{- $g := include "semaphore-common.global" . | fromYaml -}}
{{- if not $g.clusterName -}}
{{- fail "global.clusterName is required: the name of this cluster (a DNS label), as the remote clusters know it" -}}
{{- end -}}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" $g.clusterName) -}}
{{- fail (printf "global.clusterName: %q is not a DNS label (lower-case letters, digits and '-', starting and ending with a letter or digit)" $g.clusterName) -}}
{{- end -}}
{{- $seen := dict -}}
{{- range $r := $g.remotes -}}
{{- if hasKey $seen (toString $r.name) -}}
{{- fail (printf "global.remotes: %q is listed twice" $r.name) -}}
{{- end -}}
{{- if eq (toString $r.name) $g.clusterName -}}
{{- fail (printf "global.remotes: %q is the local cluster (global.clusterName)" $r.name) -}}
{{- end -}}
{{- if and $r.tokenSecret $r.kubeconfigSecret -}}
{{- fail (printf "global.remotes[%s]: set tokenSecret or kubeconfigSecret, not both" $r.name) -}}
{{- end -}}
{{- if not (or $r.tokenSecret $r.kubeconfigSecret) -}}
{{- fail (printf "global.remotes[%s]: set tokenSecret (a token from semaphore-remote) or kubeconfigSecret" $r.name) -}}
{{- end -}}
{{- if and (not $r.podRanges) (ne (toString $r.allowAnyPodAddress) "true") -}}
{{- fail (printf "global.remotes[%s]: podRanges is required: the CIDRs the remote's pod addresses lie in (kubectl semaphore link proposes them); or set allowAnyPodAddress: true to hold its addresses only to the rules every remote is held to (docs/security.md)" $r.name) -}}
{{- end -}}
{{- $_ := set $seen (toString $r.name) true -}}
{{- end -}}
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

{{- /*
semaphore-common.serviceAccount: the ServiceAccount, as a YAML document starting with "---",
when .Values.serviceAccount.create (default true); annotations from serviceAccount.annotations.
  dict "ctx" $ "component" "service-mirror"
*/ -}}
{{- define "semaphore-common.serviceAccount" -}}
{{- $sa := .ctx.Values.serviceAccount | default dict -}}
{{- if ne (toString $sa.create) "false" }}
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "semaphore-common.serviceAccountName" . }}
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "semaphore-common.labels" . | nindent 4 }}
  {{- with $sa.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
{{- end -}}
