// orc on Azure: a Function App on Flex Consumption, Cosmos DB serverless, a Storage account (documents blob
// container and queues), Azure AI Search (the span index), an Azure OpenAI deployment and Application Insights. orc reaches every data plane
// with one user-assigned managed identity holding exactly the roles docs/deploying-to-azure.md "Identity and roles" lists; keys
// are switched off on Cosmos DB, Storage, Azure AI Search and Azure OpenAI. The Functions host's own storage (its leases and
// the deployment package) uses the app's system-assigned identity, so orc's identity stays minimal.
targetScope = 'resourceGroup'

@description('azd environment name, used to name the resources.')
param environmentName string
param location string = resourceGroup().location
@description('Azure OpenAI model deployed for orc (ORC_MODEL=azure:<deployment>).')
param openAiModel string = 'gpt-4o-mini'
param openAiModelVersion string = '2024-07-18'
param openAiCapacity int = 30
param openAiApiVersion string = '2024-10-21'
@allowed(['easyauth', 'api-key'])
@description('easyauth: App Service authentication (Entra ID) is configured below and required on every request; api-key needs orcApiKeys. azd: ORC_AUTH.')
param orcAuth string = 'easyauth'
@secure()
@description('ORC_API_KEYS (JSON) when orcAuth is api-key. azd: ORC_API_KEYS.')
param orcApiKeys string = ''
@description('Application (client) id of the Entra ID app registration users sign in to (orcAuth easyauth); see docs/deploying-to-azure.md. azd: ORC_AUTH_CLIENT_ID.')
param authClientId string = ''
@description('Entra ID tenant of the app registration (default: the deployment\'s tenant).')
param authTenantId string = tenant().tenantId
@allowed(['basic', 'standard', 'standard2', 'standard3'])
@description('Azure AI Search tier of the span index (ORC_SEARCH=azure); basic holds 15 GB, enough for a few million spans.')
param searchSku string = 'basic'
@allowed(['disabled', 'free', 'standard'])
@description('The search service\'s semantic ranker plan: free (1,000 queries a month) or standard; disabled turns ORC_SEARCH_SEMANTIC off.')
param searchSemantic string = 'free'
@allowed(['RedirectToLoginPage', 'Return401'])
@description('What App Service answers an unauthenticated request: a browser sign-in redirect, or 401 (API-only use).')
param authUnauthenticatedAction string = 'RedirectToLoginPage'

// A deployment that could never let anyone in is refused before anything is created: Easy Auth without the app
// registration users sign in to, or api-key without a key.
var signInClientId = orcAuth == 'easyauth' && empty(authClientId) ? fail('orcAuth is easyauth but authClientId is empty: register the sign-in app and run azd env set ORC_AUTH_CLIENT_ID <client id> (docs/deploying-to-azure.md, step 1)') : authClientId
var apiKeys = orcAuth == 'api-key' && empty(orcApiKeys) ? fail('orcAuth is api-key but orcApiKeys is empty: run azd env set ORC_API_KEYS with the JSON of ORC_API_KEYS (docs/deploying-to-azure.md)') : orcApiKeys

var token = toLower(uniqueString(subscription().id, resourceGroup().id, environmentName))
var tags = { 'azd-env-name': environmentName }
var appName = 'func-orc-${token}'
// Every resource orc's code uses, exactly as orc/resources.py lists them (tests/azure/test_resources.py keeps the
// two equal). The app never creates them on Azure: it checks them at start-up and refuses to start without one.
var cosmosDatabase = 'orc'
var cosmosContainers = [
  { name: 'conversations', partitionKey: '/pk' }
  { name: 'catalog', partitionKey: '/pk' }
  { name: 'digests', partitionKey: '/pk' }
  { name: 'idempotency', partitionKey: '/pk' }
  { name: 'document_text', partitionKey: '/pk' }
  { name: 'checkpoints', partitionKey: '/pk' }
  { name: 'processing_leases', partitionKey: '/pk' }
  { name: 'context_requests', partitionKey: '/pk' }
  { name: 'context_request_deadlines', partitionKey: '/pk' }
  { name: 'quotas', partitionKey: '/pk' }
]
var blobContainers = ['orc']
var queueNames = ['orc-documents', 'orc-digests']
// The span index (orc/resources.py SEARCH_INDEX). An index is data on the search service, not an ARM resource: its
// definition is code (orc/search/azure/schema.py), written to search-index.json by
// `python -m orc.search.azure.schema > infra/search-index.json`, and created by the deployment script
// searchIndexSchema below.
var searchIndex = 'orc-spans'
var searchApiVersion = '2026-04-01'
// The Functions host's deployment packages (not orc's).
var deploymentContainer = 'deployments'

// Built-in role definitions (their ids are the same in every tenant).
var storageBlobDataContributor = 'ba92f5b4-2d11-453d-a403-e96b0029c9fe'
var storageQueueDataContributor = '974c5e8b-45b9-4653-ba55-5f855dd0fb88'
var cognitiveServicesOpenAiUser = '5e0bd9bd-7b93-4f28-af87-19fc36ad61bd'
var cosmosBuiltInDataContributor = '00000000-0000-0000-0000-000000000002'
var searchIndexDataContributor = '8ebe5a00-799e-43f5-93ac-243d3dce84a7'
// For the deployment script that creates the index (not for orc).
var searchServiceContributor = '7ca78c08-252a-4471-8644-bb5ff32d4ba0'
// For the Functions host (system-assigned identity), not for orc.
var storageBlobDataOwner = 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b'

resource identity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: 'id-orc-${token}'
  location: location
  tags: tags
}

resource logs 'Microsoft.OperationalInsights/workspaces@2023-09-01' = {
  name: 'log-orc-${token}'
  location: location
  tags: tags
  properties: { sku: { name: 'PerGB2018' }, retentionInDays: 30 }
}

resource insights 'Microsoft.Insights/components@2020-02-02' = {
  name: 'appi-orc-${token}'
  location: location
  tags: tags
  kind: 'web'
  properties: { Application_Type: 'web', WorkspaceResourceId: logs.id }
}

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  name: 'storc${token}'
  location: location
  tags: tags
  kind: 'StorageV2'
  sku: { name: 'Standard_LRS' }
  properties: {
    allowSharedKeyAccess: false
    allowBlobPublicAccess: false
    minimumTlsVersion: 'TLS1_2'
    supportsHttpsTrafficOnly: true
  }
}

resource blobs 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' = {
  parent: storage
  name: 'default'
}

resource orcBlobContainers 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = [
  for container in blobContainers: {
    parent: blobs
    name: container
  }
]

resource deployments 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: blobs
  name: deploymentContainer
}

resource queueService 'Microsoft.Storage/storageAccounts/queueServices@2023-05-01' = {
  parent: storage
  name: 'default'
}

resource queues 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = [
  for queue in queueNames: {
    parent: queueService
    name: queue
  }
]

resource cosmos 'Microsoft.DocumentDB/databaseAccounts@2024-11-15' = {
  name: 'cosmos-orc-${token}'
  location: location
  tags: tags
  kind: 'GlobalDocumentDB'
  properties: {
    databaseAccountOfferType: 'Standard'
    capabilities: [{ name: 'EnableServerless' }]
    locations: [{ locationName: location, failoverPriority: 0 }]
    consistencyPolicy: { defaultConsistencyLevel: 'Session' }
    disableLocalAuth: true
  }
}

// Creating databases and containers is a control-plane action the data role does not allow: made here.
resource database 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases@2024-11-15' = {
  parent: cosmos
  name: cosmosDatabase
  properties: { resource: { id: cosmosDatabase } }
}

resource containers 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers@2024-11-15' = [
  for container in cosmosContainers: {
    parent: database
    name: container.name
    properties: { resource: { id: container.name, partitionKey: { paths: [container.partitionKey], kind: 'Hash' } } }
  }
]

resource openAi 'Microsoft.CognitiveServices/accounts@2024-10-01' = {
  name: 'oai-orc-${token}'
  location: location
  tags: tags
  kind: 'OpenAI'
  sku: { name: 'S0' }
  properties: { customSubDomainName: 'oai-orc-${token}', disableLocalAuth: true, publicNetworkAccess: 'Enabled' }
}

resource model 'Microsoft.CognitiveServices/accounts/deployments@2024-10-01' = {
  parent: openAi
  name: openAiModel
  sku: { name: 'GlobalStandard', capacity: openAiCapacity }
  properties: { model: { format: 'OpenAI', name: openAiModel, version: openAiModelVersion } }
}

// Keys are off: orc and the deployment script reach the service with Entra ID (role-based access only).
resource search 'Microsoft.Search/searchServices@2023-11-01' = {
  name: 'srch-orc-${token}'
  location: location
  tags: tags
  sku: { name: searchSku }
  properties: {
    replicaCount: 1
    partitionCount: 1
    hostingMode: 'default'
    disableLocalAuth: true
    semanticSearch: searchSemantic
    publicNetworkAccess: 'enabled'
  }
}

// An identity for the deployment script only: it may manage the service's indexes, orc's identity may not.
resource deployIdentity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: 'id-orc-deploy-${token}'
  location: location
  tags: tags
}

resource searchIndexAdmin 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: search
  name: guid(search.id, deployIdentity.id, searchServiceContributor)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', searchServiceContributor)
    principalId: deployIdentity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

// Creates (or updates in place) the index from search-index.json with the data-plane API.
resource searchIndexSchema 'Microsoft.Resources/deploymentScripts@2023-08-01' = {
  name: 'orc-search-index-${token}'
  location: location
  tags: tags
  kind: 'AzureCLI'
  identity: { type: 'UserAssigned', userAssignedIdentities: { '${deployIdentity.id}': {} } }
  properties: {
    azCliVersion: '2.61.0'
    retentionInterval: 'PT1H'
    cleanupPreference: 'OnSuccess'
    // Changes with the index definition, so an edited schema is applied on the next `azd provision`.
    forceUpdateTag: uniqueString(string(loadJsonContent('search-index.json')))
    environmentVariables: [
      { name: 'SEARCH_URL', value: 'https://${search.name}.search.windows.net/indexes/${searchIndex}?api-version=${searchApiVersion}' }
      { name: 'INDEX_JSON', value: string(loadJsonContent('search-index.json')) }
    ]
    scriptContent: 'printf "%s" "$INDEX_JSON" > index.json && az rest --method put --url "$SEARCH_URL" --resource https://search.azure.com --headers Content-Type=application/json --body @index.json'
  }
  dependsOn: [searchIndexAdmin]
}

// -- orc's identity: exactly the data-plane roles it needs --------------------------------------------------

resource cosmosData 'Microsoft.DocumentDB/databaseAccounts/sqlRoleAssignments@2024-11-15' = {
  parent: cosmos
  name: guid(cosmos.id, identity.id, cosmosBuiltInDataContributor)
  properties: {
    roleDefinitionId: '${cosmos.id}/sqlRoleDefinitions/${cosmosBuiltInDataContributor}'
    principalId: identity.properties.principalId
    scope: cosmos.id
  }
}

resource blobData 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: storage
  name: guid(storage.id, identity.id, storageBlobDataContributor)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageBlobDataContributor)
    principalId: identity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

resource queueData 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: storage
  name: guid(storage.id, identity.id, storageQueueDataContributor)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageQueueDataContributor)
    principalId: identity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

resource openAiUser 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: openAi
  name: guid(openAi.id, identity.id, cognitiveServicesOpenAiUser)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', cognitiveServicesOpenAiUser)
    principalId: identity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

resource searchData 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: search
  name: guid(search.id, identity.id, searchIndexDataContributor)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', searchIndexDataContributor)
    principalId: identity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

// -- the Function App -------------------------------------------------------------------------------------

resource plan 'Microsoft.Web/serverfarms@2024-04-01' = {
  name: 'plan-orc-${token}'
  location: location
  tags: tags
  kind: 'functionapp'
  sku: { tier: 'FlexConsumption', name: 'FC1' }
  properties: { reserved: true }
}

resource app 'Microsoft.Web/sites@2024-04-01' = {
  name: appName
  location: location
  tags: union(tags, { 'azd-service-name': 'api' })
  kind: 'functionapp,linux'
  identity: {
    type: 'SystemAssigned, UserAssigned'
    userAssignedIdentities: { '${identity.id}': {} }
  }
  properties: {
    serverFarmId: plan.id
    httpsOnly: true
    functionAppConfig: {
      deployment: {
        storage: {
          type: 'blobContainer'
          value: '${storage.properties.primaryEndpoints.blob}${deploymentContainer}'
          authentication: { type: 'SystemAssignedIdentity' }
        }
      }
      scaleAndConcurrency: { maximumInstanceCount: 100, instanceMemoryMB: 2048 }
      runtime: { name: 'python', version: '3.11' }
    }
    siteConfig: {
      appSettings: [
        // The Functions host: its storage through the system-assigned identity, HTTP streams, telemetry.
        { name: 'AzureWebJobsStorage__accountName', value: storage.name }
        { name: 'PYTHON_ENABLE_INIT_INDEXING', value: '1' }
        // host.json has no route prefix, so orc's catch-all function serves / (the page) itself: not the host's page.
        { name: 'AzureWebJobsDisableHomepage', value: 'true' }
        { name: 'APPLICATIONINSIGHTS_CONNECTION_STRING', value: insights.properties.ConnectionString }
        // DefaultAzureCredential picks orc's user-assigned identity by its client id.
        { name: 'AZURE_CLIENT_ID', value: identity.properties.clientId }
        { name: 'ORC_STORAGE', value: 'azure' }
        { name: 'ORC_COSMOS_ENDPOINT', value: cosmos.properties.documentEndpoint }
        { name: 'ORC_COSMOS_DATABASE', value: cosmosDatabase }
        { name: 'ORC_BLOB_ACCOUNT_URL', value: storage.properties.primaryEndpoints.blob }
        { name: 'ORC_BLOB_CONTAINER', value: blobContainers[0] }
        { name: 'ORC_MODEL', value: 'azure:${model.name}' }
        { name: 'AZURE_OPENAI_ENDPOINT', value: openAi.properties.endpoint }
        { name: 'OPENAI_API_VERSION', value: openAiApiVersion }
        { name: 'ORC_AUTH', value: orcAuth }
        { name: 'ORC_API_KEYS', value: apiKeys }
        { name: 'ORC_MCP_ALLOWED_HOSTS', value: '${appName}.azurewebsites.net' }
        // Every instance searches one index on Azure AI Search (its disk is its own).
        { name: 'ORC_SEARCH', value: 'azure' }
        { name: 'ORC_SEARCH_ENDPOINT', value: 'https://${search.name}.search.windows.net' }
        { name: 'ORC_SEARCH_SEMANTIC', value: searchSemantic == 'disabled' ? 'false' : 'true' }
        // Uploads enqueue document and digest jobs on queueNames (fixed: the queue triggers bind them); the
        // queue-triggered functions process them.
        { name: 'ORC_JOBS', value: 'queue' }
        { name: 'ORC_QUEUE_ACCOUNT_URL', value: storage.properties.primaryEndpoints.queue }
      ]
    }
  }
  dependsOn: [orcBlobContainers, deployments, queues, containers, searchIndexSchema]
}

// -- App Service authentication (Easy Auth): required whenever orc trusts its principal header -------------
// With it on, the platform signs users in with Entra ID, rejects unauthenticated requests before they reach orc,
// strips any X-MS-* header a client sends and sets WEBSITE_AUTH_ENABLED=True, which orc checks before it trusts
// X-MS-CLIENT-PRINCIPAL (without it, orc refuses every request with 503 easyauth_not_enabled).
resource authentication 'Microsoft.Web/sites/config@2024-04-01' = if (orcAuth == 'easyauth') {
  parent: app
  name: 'authsettingsV2'
  properties: {
    platform: { enabled: true }
    globalValidation: {
      requireAuthentication: true
      unauthenticatedClientAction: authUnauthenticatedAction
      redirectToProvider: 'azureactivedirectory'
      // Liveness for probes; orc answers it without any detail to an unauthenticated caller.
      excludedPaths: ['/api/health']
    }
    httpSettings: { requireHttps: true }
    identityProviders: {
      azureActiveDirectory: {
        enabled: true
        registration: {
          clientId: signInClientId
          openIdIssuer: '${environment().authentication.loginEndpoint}${authTenantId}/v2.0'
        }
        validation: { allowedAudiences: [signInClientId, 'api://${signInClientId}'] }
      }
    }
    login: { tokenStore: { enabled: true } }
  }
}

resource hostStorage 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: storage
  name: guid(storage.id, app.id, storageBlobDataOwner)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageBlobDataOwner)
    principalId: app.identity.principalId
    principalType: 'ServicePrincipal'
  }
}

// The queue triggers run in the host, which reads the queues with the system-assigned identity.
resource hostQueues 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: storage
  name: guid(storage.id, app.id, storageQueueDataContributor)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageQueueDataContributor)
    principalId: app.identity.principalId
    principalType: 'ServicePrincipal'
  }
}

output AZURE_FUNCTION_APP_NAME string = app.name
output ORC_URL string = 'https://${app.properties.defaultHostName}/api'
output ORC_IDENTITY_CLIENT_ID string = identity.properties.clientId
// What `orc doctor` needs to check this deployment from a workstation (`azd env get-values`); none is a secret.
output ORC_STORAGE string = 'azure'
output ORC_COSMOS_ENDPOINT string = cosmos.properties.documentEndpoint
output ORC_COSMOS_DATABASE string = cosmosDatabase
output ORC_BLOB_ACCOUNT_URL string = storage.properties.primaryEndpoints.blob
output ORC_JOBS string = 'queue'
output ORC_QUEUE_ACCOUNT_URL string = storage.properties.primaryEndpoints.queue
output ORC_SEARCH string = 'azure'
output ORC_SEARCH_ENDPOINT string = 'https://${search.name}.search.windows.net'
output ORC_MODEL string = 'azure:${model.name}'
output AZURE_OPENAI_ENDPOINT string = openAi.properties.endpoint
output OPENAI_API_VERSION string = openAiApiVersion
