{{/* Labels every object carries: the plain manifests' own, plus Helm's. */}}
{{- define "volsched.labels" -}}
app.kubernetes.io/name: volsched
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "volsched.schedulerLabels" -}}
{{ include "volsched.labels" . }}
app.kubernetes.io/component: scheduler
{{- end -}}

{{- define "volsched.selector" -}}
app.kubernetes.io/name: volsched
app.kubernetes.io/component: scheduler
{{- end -}}

{{- define "volsched.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* An optional set of plain manifests from deploy/, moved to the release namespace. */}}
{{- define "volsched.plain" -}}
{{ .root.Files.Get .file | replace "volsched-system" .root.Release.Namespace | replace "image: volsched:0.1.0" (printf "image: %s" (include "volsched.image" .root)) }}
{{- end -}}

{{/* "true" when the chart makes the ServiceMonitor's token: its own scraper account. */}}
{{- define "volsched.makesScraperToken" -}}
{{- $monitor := .Values.serviceMonitor -}}
{{- if and $monitor.enabled $monitor.tokenSecret.create (not $monitor.bearerTokenFile) -}}true{{- end -}}
{{- end -}}
