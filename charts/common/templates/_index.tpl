{{- /*
semaphore-common: the helpers the Semaphore charts share (the umbrella, its subcharts and
semaphore-remote). Each template documents what it reads above its definition. Index:
  _names.tpl              name, fullname, chart, serviceAccountName
  _labels.tpl             selectorLabels, labels
  _global.tpl             global (.Values.global with defaults)
  _validations.tpl        validate
  _images.tpl             image, imagePullPolicy, imagePullSecrets
  _remotes.tpl            remotesDir, remoteSecretName, remoteSecrets, remotesChecksum, remoteVolumes,
                          remoteVolumeMounts, remotePodRanges
  _env.tpl                env (shared variables), leaderElectionEnv, extraEnv
  _pod.tpl                adminPort, adminContainerPort, probes, podSecurityContext,
                          containerSecurityContext
  _scheduling.tpl         affinity, podScheduling
  _rbac.tpl               serviceAccount, leaderElectionRBAC, localRangesRBAC
  _poddisruptionbudget.tpl podDisruptionBudget
  _networkpolicy.tpl      networkPolicy
  _uninstall.tpl          uninstallHook (the pre-delete hook that makes the component remove what it made)
  _monitoring.tpl         monitoring (= metricsService + serviceMonitor + podMonitor + prometheusRule +
                          dashboards; each on through global.monitoring or its own enabled)
A component's templates look like service-mirror's (charts/semaphore/charts/service-mirror/templates).

Every template takes one input shape, a dict:
  dict "ctx" $ "component" "service-mirror"
  ctx        the including chart's root context ($). Values come from it: the chart's own keys and
             .Values.global.* (with defaults, so that a subchart installed alone works).
  component  the component's fixed name: "service-mirror", "policy" or "wireguard" ("overview" for
             the umbrella's own monitoring objects). It is passed explicitly because .Chart.Name is
             the alias (serviceMirror) when the subchart is used through the umbrella, and an alias
             is not a valid object name. Left out by a chart that is not one component
             (semaphore-remote): its objects are then named after the chart (see
             semaphore-common.name).
A few templates read more keys of the same dict (remote, root, add, monitor, key, extra, kind,
workload, container, portlessContainer), as noted; one reads nothing from it (remotesDir), and
takes it all the same. Template names are namespaced "semaphore-common.*"; the ones with a
further dot (".items") are internal.
*/ -}}
