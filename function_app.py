"""Azure Functions entry: the same ASGI app as ``orc serve``, exposed to the Functions host. No logic here.

Settings come from the Function App's application settings (``ORC_*``); see README "Deploying to Azure".
"""

import azure.functions as func

from orc.http import create_app

app = func.AsgiFunctionApp(app=create_app(), http_auth_level=func.AuthLevel.ANONYMOUS)
