{{/* The release's resource name. */}}
{{- define "jwksverify.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels every resource carries. */}}
{{- define "jwksverify.labels" -}}
{{ include "jwksverify.selectorLabels" . }}
app.kubernetes.io/component: auth
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Labels the Service, PDB and spread constraints select pods by. */}}
{{- define "jwksverify.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The port name of the probes and /metrics: admin when it is on, else http. */}}
{{- define "jwksverify.opsPort" -}}
{{- if gt (int .Values.ports.admin) 0 }}admin{{ else }}http{{ end -}}
{{- end -}}

{{/* The scheme of the listener the probes and the ServiceMonitor reach: the admin listener's
     (HTTPS with config.admin_tls) when it is on, else the http listener's (HTTPS with
     tls.secretName). */}}
{{- define "jwksverify.opsScheme" -}}
{{- if gt (int .Values.ports.admin) 0 -}}
{{- if ((.Values.config.admin_tls | default dict).cert_file) }}HTTPS{{ else }}HTTP{{ end -}}
{{- else -}}
{{- if .Values.tls.secretName }}HTTPS{{ else }}HTTP{{ end -}}
{{- end -}}
{{- end -}}

{{/* The seconds of a Go duration ("1m30s", "500ms", "0"), as a float; "" when it is not one
     (jwksverify then refuses the config and says why). */}}
{{- define "jwksverify.seconds" -}}
{{- $d := toString . -}}
{{- if eq $d "0" -}}0
{{- else if regexMatch "^([0-9]*[.]?[0-9]+(ns|us|µs|ms|s|m|h))+$" $d -}}
{{- $unit := dict "ns" 0.000000001 "us" 0.000001 "µs" 0.000001 "ms" 0.001 "s" 1.0 "m" 60.0 "h" 3600.0 -}}
{{- $total := 0.0 -}}
{{- range $part := regexFindAll "[0-9]*[.]?[0-9]+(ns|us|µs|ms|s|m|h)" $d -1 -}}
{{- $num := regexFind "^[0-9]*[.]?[0-9]+" $part -}}
{{- $total = addf $total (mulf (float64 $num) (get $unit (trimPrefix $num $part))) -}}
{{- end -}}
{{- $total -}}
{{- end -}}
{{- end -}}

{{/* jwksverify's config.yaml: .Values.config plus the keys the chart owns. */}}
{{- define "jwksverify.config" -}}
{{- $cfg := deepCopy .Values.config -}}
{{- range $k := list "listen" "grpc_listen" "admin_listen" "tls" "state_dir" "redis" -}}
{{- if hasKey $.Values.config $k -}}
{{- fail (printf "config.%s is set by the chart; use the ports, tls and redis values" $k) -}}
{{- end -}}
{{- end -}}
{{- with .Values.config.admin_tls -}}
{{- if eq (int $.Values.ports.admin) 0 -}}
{{- fail "config.admin_tls needs ports.admin: with ports.admin 0 the probes and /metrics are on the http port, under tls (jwksverify refuses admin_tls without admin_listen)" -}}
{{- end -}}
{{- if eq (toString .client_auth) "require" -}}
{{- fail "config.admin_tls.client_auth require: the kubelet's probes present no client certificate, so every probe would fail; use request" -}}
{{- end -}}
{{- end -}}
{{- /* The kubelet kills the container terminationGracePeriodSeconds after SIGTERM: the drain
     (shutdown_delay, at least 1s, then shutdown_timeout; jwksverify's defaults 0s and 15s) must
     end before, or the requests in flight are cut. */ -}}
{{- $delay := include "jwksverify.seconds" (.Values.config.shutdown_delay | default "0s") -}}
{{- $timeout := include "jwksverify.seconds" (.Values.config.shutdown_timeout | default "15s") -}}
{{- if and $delay $timeout -}}
{{- $drain := addf (maxf 1 (float64 $delay)) (float64 $timeout) -}}
{{- if le (float64 .Values.terminationGracePeriodSeconds) $drain -}}
{{- fail (printf "terminationGracePeriodSeconds %v does not exceed the drain, shutdown_delay (at least 1s) + shutdown_timeout = %vs: the kubelet would kill the pod while requests are in flight" .Values.terminationGracePeriodSeconds $drain) -}}
{{- end -}}
{{- end -}}
{{- $_ := set $cfg "listen" (printf "0.0.0.0:%d" (int .Values.ports.http)) -}}
{{- if gt (int .Values.ports.grpc) 0 -}}
{{- $_ := set $cfg "grpc_listen" (printf "0.0.0.0:%d" (int .Values.ports.grpc)) -}}
{{- end -}}
{{- if gt (int .Values.ports.admin) 0 -}}
{{- $_ := set $cfg "admin_listen" (printf "0.0.0.0:%d" (int .Values.ports.admin)) -}}
{{- end -}}
{{- if .Values.tls.secretName -}}
{{- $_ := set $cfg "tls" (dict "cert_file" "/etc/jwksverify-tls/tls.crt" "key_file" "/etc/jwksverify-tls/tls.key") -}}
{{- if and (gt (int .Values.ports.grpc) 0) (not (hasKey $.Values.config "grpc_tls")) -}}
{{- $_ := set $cfg "grpc_tls" (dict "cert_file" "/etc/jwksverify-tls/tls.crt" "key_file" "/etc/jwksverify-tls/tls.key") -}}
{{- end -}}
{{- end -}}
{{- $_ := set $cfg "state_dir" "/var/lib/jwksverify" -}}
{{- with (include "jwksverify.redis" . | fromYaml) -}}
{{- $_ := set $cfg "redis" . -}}
{{- end -}}
{{- $r := .Values.redis -}}
{{- range $i, $is := ($cfg.issuers | default list) -}}
{{- $cache := ((($is.introspection | default dict).cache) | default dict) -}}
{{- if and $cache.shared (not $cache.key_file) -}}
{{- if not $r.cacheKeySecret.name -}}
{{- fail (printf "config.issuers[%d].introspection.cache.shared needs a key: set redis.cacheKeySecret.name (or the issuer's cache.key_file)" $i) -}}
{{- end -}}
{{- $_ := set $cache "key_file" (printf "%s/key" (include "jwksverify.redisDir" "cache-key")) -}}
{{- end -}}
{{- end -}}
{{- if .Values.mint.secretName -}}
{{- if not (hasKey $cfg "mint") -}}
{{- fail "mint.secretName is set but config.mint is not: set config.mint.issuer and config.mint.signing_kid" -}}
{{- end -}}
{{- if hasKey $cfg.mint "keys_file" -}}
{{- fail "config.mint.keys_file is set by the chart; use the mint.secretName value" -}}
{{- end -}}
{{- $_ := set $cfg.mint "keys_file" (printf "/etc/jwksverify-mint/%s" .Values.mint.secretKey) -}}
{{- else if hasKey $cfg "mint" -}}
{{- fail "config.mint needs its keys from a Secret: set mint.secretName (and mint.secretKey)" -}}
{{- end -}}
{{- $k := .Values.kubernetesServiceAccountIssuer -}}
{{- if $k.enabled -}}
{{- $entry := deepCopy ($k.issuerConfig | default dict) -}}
{{- range $key := list "issuer" "discovery" "discovery_url" "ca_file" "fetch_bearer_token_file" "audiences" -}}
{{- if hasKey $entry $key -}}
{{- fail (printf "kubernetesServiceAccountIssuer.issuerConfig.%s is set by the chart; use the kubernetesServiceAccountIssuer values" $key) -}}
{{- end -}}
{{- end -}}
{{- if not $k.issuer -}}
{{- fail "kubernetesServiceAccountIssuer.issuer is required: the issuer of the cluster's discovery document" -}}
{{- end -}}
{{- if not $k.audiences -}}
{{- fail "kubernetesServiceAccountIssuer.audiences is required: the audiences your workloads request their tokens for" -}}
{{- end -}}
{{- $dir := include "jwksverify.kubernetesDir" . -}}
{{- $_ := set $entry "issuer" $k.issuer -}}
{{- $_ := set $entry "discovery" true -}}
{{- $_ := set $entry "discovery_url" $k.discoveryURL -}}
{{- $_ := set $entry "ca_file" (printf "%s/ca.crt" $dir) -}}
{{- $_ := set $entry "fetch_bearer_token_file" (printf "%s/token" $dir) -}}
{{- $_ := set $entry "audiences" $k.audiences -}}
{{- $_ := set $cfg "issuers" (append ($cfg.issuers | default list) $entry) -}}
{{- end -}}
{{- /* Every pod is a process of its own behind the Service, its state_dir an emptyDir gone with
     the pod (every rollout): what the config keeps per process is not shared and not kept. */ -}}
{{- if hasKey $cfg "revocation" -}}
{{- if ne (($cfg.revocation | default dict).store | default "memory") "redis" -}}
{{- fail "config.revocation needs store: redis (and the redis values) with the chart: a memory store holds an entry at the one pod that took it, in an emptyDir every rollout throws away" -}}
{{- end -}}
{{- end -}}
{{- $multi := ternary (gt (int .Values.autoscaling.maxReplicas) 1) (gt (int .Values.replicas) 1) .Values.autoscaling.enabled -}}
{{- if $multi -}}
{{- range $i, $is := ($cfg.issuers | default list) -}}
{{- $dpop := toString ((($is.sender_constraint | default dict).dpop) | default "off") -}}
{{- if and (not (has $dpop (list "off" "false"))) (ne ((($cfg.dpop | default dict).replay_store) | default "memory") "redis") -}}
{{- fail (printf "config.issuers[%d] uses DPoP on more than one replica: set config.dpop.replay_store: redis (and the redis values); a memory replay store lets a proof used at one pod be replayed at another" $i) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toYaml $cfg -}}
{{- end -}}


{{/* Where the projected service-account token and the cluster CA are mounted. */}}
{{- define "jwksverify.kubernetesDir" -}}
/var/run/secrets/jwksverify/kubernetes
{{- end -}}

{{/* The ServiceAccount of the pods with kubernetesServiceAccountIssuer. */}}
{{- define "jwksverify.serviceAccountName" -}}
{{- .Values.kubernetesServiceAccountIssuer.serviceAccountName | default (include "jwksverify.fullname" .) -}}
{{- end -}}


{{/* Where the chart mounts a Redis Secret: jwksverify.redisDir "password" and so on. */}}
{{- define "jwksverify.redisDir" -}}
/etc/jwksverify-redis/{{ . }}
{{- end -}}

{{/* The config's redis section from .Values.redis, "" without Redis. */}}
{{- define "jwksverify.redis" -}}
{{- $r := .Values.redis -}}
{{- $out := dict -}}
{{- if eq $r.mode "url" -}}
{{- if not $r.url -}}{{- fail "redis.url is required with redis.mode url" -}}{{- end -}}
{{- if contains "@" $r.url -}}{{- fail "redis.url must hold no user or password: use redis.username and redis.passwordSecret" -}}{{- end -}}
{{- $_ := set $out "url" $r.url -}}
{{- else if eq $r.mode "sentinel" -}}
{{- if not $r.sentinel.addrs -}}{{- fail "redis.sentinel.addrs is required with redis.mode sentinel" -}}{{- end -}}
{{- $s := dict "master" $r.sentinel.master "addrs" $r.sentinel.addrs -}}
{{- if $r.sentinel.passwordSecret.name -}}
{{- $_ := set $s "password_file" (printf "%s/password" (include "jwksverify.redisDir" "sentinel")) -}}
{{- end -}}
{{- $_ := set $out "sentinel" $s -}}
{{- else if eq $r.mode "cluster" -}}
{{- if not $r.cluster.addrs -}}{{- fail "redis.cluster.addrs is required with redis.mode cluster" -}}{{- end -}}
{{- $_ := set $out "cluster" (dict "addrs" $r.cluster.addrs) -}}
{{- else if $r.mode -}}
{{- fail (printf "redis.mode %q is not one of \"\", url, sentinel, cluster" $r.mode) -}}
{{- end -}}
{{- if $r.mode -}}
{{- if $r.username -}}{{- $_ := set $out "username" $r.username -}}{{- end -}}
{{- if $r.passwordSecret.name -}}
{{- $_ := set $out "password_file" (printf "%s/password" (include "jwksverify.redisDir" "password")) -}}
{{- end -}}
{{- if $r.tls.secretName -}}
{{- $dir := include "jwksverify.redisDir" "tls" -}}
{{- $t := dict "ca_file" (printf "%s/ca.crt" $dir) -}}
{{- if $r.tls.clientCert -}}
{{- $_ := set $t "cert_file" (printf "%s/tls.crt" $dir) -}}
{{- $_ := set $t "key_file" (printf "%s/tls.key" $dir) -}}
{{- end -}}
{{- $_ := set $out "tls" $t -}}
{{- end -}}
{{- $_ := set $out "timeout" $r.timeout -}}
{{- $_ := set $out "acknowledge_replicas" (int $r.acknowledgeReplicas) -}}
{{- toYaml $out -}}
{{- end -}}
{{- end -}}
