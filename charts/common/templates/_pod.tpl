{{- /*
Pod and container settings every component shares: the admin port and the probes on it, and the
security contexts.
*/ -}}

{{- /*
semaphore-common.adminPort: the admin server's port (/metrics, /healthz, /readyz), from
.Values.adminPort (default 8080). SEMAPHORE_ADMIN_ADDR is ":<port>".
  dict "ctx" $ "component" "service-mirror"
*/ -}}
{{- define "semaphore-common.adminPort" -}}
{{- .ctx.Values.adminPort | default 8080 | int -}}
{{- end -}}

{{- /*
semaphore-common.adminContainerPort: the container's ports items (no "ports:" key): the admin
port, named "admin".
  dict "ctx" $ "component" "service-mirror"
*/ -}}
{{- define "semaphore-common.adminContainerPort" -}}
- name: admin
  containerPort: {{ include "semaphore-common.adminPort" . }}
  protocol: TCP
{{- end -}}

{{- /*
semaphore-common.probes: the container's livenessProbe (/healthz: the process is alive) and
readinessProbe (/readyz: local caches synced, devices up; never the remotes, so an outage does not
stall a rollout) on the admin port, as two keys at the container's level. /healthz does not
depend on remotes either: a remote outage never restarts a pod. The port is given by number, not
by the name "admin": wireguard's container declares no ports (see its DaemonSet).
  dict "ctx" $ "component" "service-mirror"
*/ -}}
{{- define "semaphore-common.probes" -}}
livenessProbe:
  httpGet:
    path: /healthz
    port: {{ include "semaphore-common.adminPort" . }}
  initialDelaySeconds: 5
  periodSeconds: 10
  timeoutSeconds: 5
  failureThreshold: 6
readinessProbe:
  httpGet:
    path: /readyz
    port: {{ include "semaphore-common.adminPort" . }}
  periodSeconds: 10
  timeoutSeconds: 5
  failureThreshold: 3
{{- end -}}

{{- /*
semaphore-common.podSecurityContext: the pod's securityContext body (no key), to use as
  securityContext:
    {{- include "semaphore-common.podSecurityContext" $c | nindent 8 }}
  dict "ctx" $ "component" "service-mirror"
      non-root (uid/gid/fsGroup 65532, the distroless "nonroot" user; the fsGroup makes the
      remote credentials (mode 0440) readable)
  dict "ctx" $ "component" "wireguard" "root" true
      for wireguard: uid 0, which it needs for /dev/net/tun and the key directory on the host;
      capabilities are limited per container.
Both set seccompProfile RuntimeDefault.
*/ -}}
{{- define "semaphore-common.podSecurityContext" -}}
{{- if .root -}}
runAsNonRoot: false
runAsUser: 0
runAsGroup: 0
{{- else -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
{{- end }}
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- /*
semaphore-common.containerSecurityContext: the container's securityContext body (no key):
read-only root filesystem, no privilege escalation, every capability dropped, seccomp
RuntimeDefault, never privileged.
  dict "ctx" $ "component" "service-mirror"
      non-root, uid 65532
  dict "ctx" $ "component" "wireguard" "root" true "add" (list "NET_ADMIN")
      wireguard: root, with only the listed capabilities added back
*/ -}}
{{- define "semaphore-common.containerSecurityContext" -}}
{{- if .root -}}
runAsNonRoot: false
runAsUser: 0
{{- else -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
{{- end }}
privileged: false
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop:
    - ALL
  {{- with .add }}
  add:
    {{- toYaml . | nindent 4 }}
  {{- end }}
seccompProfile:
  type: RuntimeDefault
{{- end -}}
