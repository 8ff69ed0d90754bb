{{- /*
semaphore-common.networkPolicy: a networking.k8s.io/v1 NetworkPolicy (YAML document starting
with "---") when .Values.networkPolicy.enabled (default false) that admits to the component's
pods nothing but the admin port (metrics, probes), from .Values.networkPolicy.adminFrom (a list
of NetworkPolicyPeers; default: every pod of the cluster). The controllers serve nothing else;
they only make connections (to the API servers), which an Ingress policy does not restrict.
Traffic from the pod's own node (the kubelet's probes) is always allowed by NetworkPolicy
implementations.
  dict "ctx" $ "component" "service-mirror"
*/ -}}
{{- define "semaphore-common.networkPolicy" -}}
{{- $np := .ctx.Values.networkPolicy | default dict -}}
{{- if eq (toString $np.enabled) "true" }}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: {{ include "semaphore-common.fullname" . }}
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "semaphore-common.labels" . | nindent 4 }}
spec:
  podSelector:
    matchLabels:
      {{- include "semaphore-common.selectorLabels" . | nindent 6 }}
  policyTypes: [Ingress]
  ingress:
    - ports:
        - port: admin
          protocol: TCP
      from:
        {{- toYaml ($np.adminFrom | default (list (dict "namespaceSelector" dict))) | nindent 8 }}
{{- end }}
{{- end -}}
