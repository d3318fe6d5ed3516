"""Azure Functions entry: the same ASGI app as ``orc serve``, relayed by one streaming HTTP function. No logic here.

Settings come from the Function App's application settings (``ORC_*``); see README "Deploying to Azure".
"""

from orc.http import create_app
from orc.http.functions_relay import RelayFunctionApp

app = RelayFunctionApp(create_app())
