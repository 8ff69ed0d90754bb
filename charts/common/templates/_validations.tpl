{{- /*
semaphore-common.validate: fails rendering, with a message naming the value, on what the schema
cannot express: a missing or invalid global.clusterName, remote names listed twice or equal to
the cluster name, a remote without podRanges that does not opt out (allowAnyPodAddress). Renders
nothing. Call it once from any template of the component.
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
{{- end -}}
