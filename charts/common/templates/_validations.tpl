{{- /*
semaphore-common.validate: fails rendering, with a message naming the value, on what the schema
cannot express: a missing or invalid global.clusterName, remote names listed twice or equal to
the cluster name, a remote without podRanges that does not opt out (allowAnyPodAddress), a
DaemonSet's updateStrategy that the API server would refuse
(semaphore-common.validate.updateStrategy). Renders nothing. Call it once from any template of
the component.
  dict "ctx" $ "component" "service-mirror"
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
{{- include "semaphore-common.validate.updateStrategy" . -}}
{{- end -}}

{{- /*
(internal) .Values.updateStrategy of a DaemonSet (wireguard's): a rolling update must have exactly
one of rollingUpdate.maxSurge and maxUnavailable other than 0 (a number or a percentage), or the
API server refuses the DaemonSet. Both 0 would replace no pod; both set is what an override of
one gives when merged over the chart's default of the other, so the message says which to zero.
Unset, they read as the API server's defaults (maxSurge 0, maxUnavailable 1). OnDelete and
charts without updateStrategy are left alone.
  dict "ctx" $ "component" "wireguard"
*/ -}}
{{- define "semaphore-common.validate.updateStrategy" -}}
{{- $s := .ctx.Values.updateStrategy -}}
{{- if and $s (ne (toString $s.type) "OnDelete") -}}
{{- $ru := $s.rollingUpdate | default dict -}}
{{- $at := printf "updateStrategy.rollingUpdate (%s.updateStrategy through the umbrella chart)" .ctx.Chart.Name -}}
{{- $n := dict -}}
{{- range $key, $default := dict "maxSurge" 0 "maxUnavailable" 1 -}}
{{- $v := get $ru $key -}}
{{- if kindIs "invalid" $v }}{{ $v = $default }}{{ end -}}
{{- $_ := set $n $key (ternary (toString $v | trimSuffix "%" | atoi) ($v | int) (kindIs "string" $v)) -}}
{{- end -}}
{{- if and (eq $n.maxSurge 0) (eq $n.maxUnavailable 0) -}}
{{- fail (printf "%s: maxSurge and maxUnavailable are both 0, so a rollout would replace no pod: set maxSurge: 1 (a successor starts beside each pod, the default) or maxSurge: 0 with maxUnavailable: 1 (each pod stops before its successor starts)" $at) -}}
{{- end -}}
{{- if and (ne $n.maxSurge 0) (ne $n.maxUnavailable 0) -}}
{{- fail (printf "%s: maxSurge (%v) and maxUnavailable (%v) are both set, and a DaemonSet takes only one of them: set maxSurge: 0 to replace pods maxUnavailable at a time, or maxUnavailable: 0 to start a successor beside each pod" $at (get $ru "maxSurge" | default 0) (get $ru "maxUnavailable" | default 1)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
