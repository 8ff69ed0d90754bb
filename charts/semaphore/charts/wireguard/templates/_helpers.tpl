{{- /*
semaphore-wireguard.listenPorts: SEMAPHORE_WG_LISTEN_PORTS, "remote:port" pairs joined by ",",
in the order of global.remotes. Fails, naming the value to set, when a remote has no port or two
remotes share one: the binary would refuse to start, and a failed install is easier to read than
a crash-looping DaemonSet. Ports of clusters that are not remotes are left out (the binary would
refuse those too), so that one listenPorts map can serve the releases of every cluster; a
misspelt name still fails, as the remote it was meant for then has no port.
  dict "ctx" $ "component" "wireguard" (the shape of the semaphore-common helpers)
*/ -}}
{{- define "semaphore-wireguard.listenPorts" -}}
{{- $ports := .ctx.Values.listenPorts | default dict -}}
{{- $remotes := (include "semaphore-common.global" . | fromYaml).remotes -}}
{{- $pairs := list -}}
{{- $byPort := dict -}}
{{- range $r := $remotes -}}
{{- $name := toString $r.name -}}
{{- if not (hasKey $ports $name) -}}
{{- fail (printf "listenPorts: no port for remote %q: every remote in global.remotes needs its own UDP port, e.g. listenPorts: {%s: 51821} (wireguard.listenPorts through the umbrella chart)" $name $name) -}}
{{- end -}}
{{- $port := index $ports $name | int -}}
{{- with get $byPort (toString $port) -}}
{{- fail (printf "listenPorts: %q and %q share port %d: each remote's device needs its own port" . $name $port) -}}
{{- end -}}
{{- $_ := set $byPort (toString $port) $name -}}
{{- $pairs = append $pairs (printf "%s:%d" $name $port) -}}
{{- end -}}
{{- join "," $pairs -}}
{{- end -}}

{{- /*
semaphore-wireguard.perRemote: a setting that takes a value per remote (SEMAPHORE_WG_POD_CIDRS_FROM,
SEMAPHORE_WG_TOPOLOGY) from .value. A string applies to every remote and is passed as is; a map
{<remote>: value} becomes "remote:value" pairs joined by ",", in the order of global.remotes. As
with listenPorts, names that are not remotes are left out (the binary would refuse them), so that
one map can serve the releases of every cluster; remotes not in the map get .default, and so does
a map that names none of them, or no value. The schema checks the values.
  dict "ctx" $ "component" "wireguard" "value" <the value> "default" <its default>
*/ -}}
{{- define "semaphore-wireguard.perRemote" -}}
{{- $v := .value | default .default -}}
{{- if kindIs "map" $v -}}
{{- $remotes := (include "semaphore-common.global" . | fromYaml).remotes -}}
{{- $pairs := list -}}
{{- range $r := $remotes -}}
{{- $name := toString $r.name -}}
{{- if hasKey $v $name -}}
{{- $pairs = append $pairs (printf "%s:%s" $name (index $v $name | toString)) -}}
{{- end -}}
{{- end -}}
{{- $pairs | join "," | default $.default -}}
{{- else -}}
{{- $v | toString -}}
{{- end -}}
{{- end -}}

{{- /*
semaphore-wireguard.podCIDRsFrom: SEMAPHORE_WG_POD_CIDRS_FROM, where each remote node's pod
addresses come from (node or calico-ipam; node by default).
semaphore-wireguard.topology: SEMAPHORE_WG_TOPOLOGY, how this cluster reaches each remote (mesh or
gateway; mesh by default).
  dict "ctx" $ "component" "wireguard" (the shape of the semaphore-common helpers)
*/ -}}
{{- define "semaphore-wireguard.podCIDRsFrom" -}}
{{- include "semaphore-wireguard.perRemote" (merge (dict "value" .ctx.Values.podCIDRsFrom "default" "node") .) -}}
{{- end -}}
{{- define "semaphore-wireguard.topology" -}}
{{- include "semaphore-wireguard.perRemote" (merge (dict "value" .ctx.Values.topology "default" "mesh") .) -}}
{{- end -}}

{{- /*
semaphore-wireguard.gatewayNodes: SEMAPHORE_WG_GATEWAY_NODES, gatewayNodeSelector {label: value}
as a label selector "label=value,...", in label order; wireguard.semaphore.uw.io/gateway=true
when it is empty.
*/ -}}
{{- define "semaphore-wireguard.gatewayNodes" -}}
{{- $terms := list -}}
{{- range $k, $v := .ctx.Values.gatewayNodeSelector | default (dict "wireguard.semaphore.uw.io/gateway" "true") -}}
{{- $terms = append $terms (printf "%s=%s" $k (toString $v)) -}}
{{- end -}}
{{- join "," $terms -}}
{{- end -}}

{{- /*
semaphore-wireguard.endpointRanges: SEMAPHORE_WG_REMOTE_ENDPOINT_RANGES, every CIDR of
endpointRanges {<remote>: [CIDR, ...]} as "remote:CIDR" pairs joined by ",", in the order of
global.remotes; empty when no remote has any. As with listenPorts, names that are not remotes
are left out (the binary would refuse them), so that one map can serve the releases of every
cluster. The schema checks the CIDRs' form, the binary the rest.
  dict "ctx" $ "component" "wireguard" (the shape of the semaphore-common helpers)
*/ -}}
{{- define "semaphore-wireguard.endpointRanges" -}}
{{- $ranges := .ctx.Values.endpointRanges | default dict -}}
{{- $pairs := list -}}
{{- range $r := (include "semaphore-common.global" . | fromYaml).remotes -}}
{{- $name := toString $r.name -}}
{{- range $cidr := (get $ranges $name | default list) -}}
{{- $pairs = append $pairs (printf "%s:%s" $name $cidr) -}}
{{- end -}}
{{- end -}}
{{- join "," $pairs -}}
{{- end -}}
