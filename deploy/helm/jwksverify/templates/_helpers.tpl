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

{{/* jwksverify's config.yaml: .Values.config plus the keys the chart owns. */}}
{{- define "jwksverify.config" -}}
{{- $cfg := deepCopy .Values.config -}}
{{- range $k := list "listen" "grpc_listen" "admin_listen" "tls" "state_dir" -}}
{{- if hasKey $.Values.config $k -}}
{{- fail (printf "config.%s is set by the chart; use the ports and tls values" $k) -}}
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
{{- $_ := set $cfg "tls" (dict "cert_file" "/etc/jwksverify/tls/tls.crt" "key_file" "/etc/jwksverify/tls/tls.key") -}}
{{- end -}}
{{- $_ := set $cfg "state_dir" "/var/lib/jwksverify" -}}
{{- toYaml $cfg -}}
{{- end -}}
