{{/* Names and labels shared by every template. */}}
{{- define "berth.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "berth.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "berth.selectorLabels" -}}
app.kubernetes.io/name: {{ include "berth.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{- define "berth.labels" -}}
{{ include "berth.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "berth.webhookService" -}}
{{ include "berth.fullname" . }}-webhook
{{- end -}}

{{- define "berth.certSecret" -}}
{{ include "berth.fullname" . }}-webhook-tls
{{- end -}}

{{- define "berth.image" -}}
{{ .Values.controllerManager.manager.image.repository }}:{{ default .Chart.AppVersion .Values.controllerManager.manager.image.tag }}
{{- end -}}

{{/* The operator's Configuration file: the values' managerConfig in the release namespace. */}}
{{- define "berth.configuration" -}}
apiVersion: berth.dev/v1beta1
kind: Configuration
{{ toYaml (merge (dict "namespace" .Release.Namespace) .Values.managerConfig) }}
{{- end -}}

{{- /*
The job kinds beside batch/v1 Job, by their framework name in managerConfig.integrations.frameworks:
[API group, version, resource]. berth.jobs.registry holds the same table.
*/ -}}
{{- define "berth.jobKinds" -}}
jobset.x-k8s.io/jobset: [jobset.x-k8s.io, v1alpha2, jobsets]
kubeflow.org/pytorchjob: [kubeflow.org, v1, pytorchjobs, scale]
kubeflow.org/tfjob: [kubeflow.org, v1, tfjobs]
kubeflow.org/paddlejob: [kubeflow.org, v1, paddlejobs, scale]
kubeflow.org/xgboostjob: [kubeflow.org, v1, xgboostjobs]
kubeflow.org/jaxjob: [kubeflow.org, v1, jaxjobs, scale]
ray.io/rayjob: [ray.io, v1, rayjobs]
ray.io/raycluster: [ray.io, v1, rayclusters]
trainer.kubeflow.org/trainjob: [trainer.kubeflow.org, v1alpha1, trainjobs]
{{- end -}}
