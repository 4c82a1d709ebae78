"""The official Worldline Connect Python server SDK as a merchant's server, against a given endpoint.

Usage: python sdk_client.py <command>   stdin {"endpoint": "http://127.0.0.1:PORT", "apiKeyId": ..., "secretApiKey": ...,
                                               "merchantId": ..., ...command members}
  session   -> {"ok": true, "session": {"clientSessionId", "customerId", "clientApiUrl", "assetUrl", "region", "invalidTokens"}}
  pay       members: encryptedCustomerInput, amount, currencyCode, merchantReference, clientMetaInfo (the JSON text),
            idempotenceKey, authorizationMode (optional)
            -> {"ok": true, "created": <payment>, "merchantAction": <type or null>, "fetched": <payment>}
  approve   members: paymentId, amount -> {"ok": true, "payment": <payment>}
  capture   members: paymentId, amount, isFinal, captureReference, idempotenceKey
            -> {"ok": true, "capture": <capture>, "listed": [<capture>], "fetched": <capture>}
  refund    members: paymentId, amount, currencyCode, merchantReference, idempotenceKey
            -> {"ok": true, "refund": <refund>, "listed": [<refund>], "fetched": <refund>, "timestamp": <X-GCS-Idempotence-Request-Timestamp or null>}
  cancel    members: paymentId, idempotenceKey -> {"ok": true, "payment": <payment>}
  finalize  members: paymentId -> {"ok": true, "payment": <payment>}
  models    members: models [{"model": "CapturePaymentRequest" | "ApprovePaymentRequest" | "RefundRequest", "body": {...}}]
            -> {"ok": true, "models": [<the body read into the SDK's model and written back>]}

A call the SDK raises for answers {"ok": false, "exception": <class name>, "statusCode", "errorId", "errors": [{code,
message, propertyName}], "payment": <the declined payment, for DeclinedPaymentException>}; the test decides what
it means. <payment> is {"id", "status", "statusCategory", "statusCode", "isAuthorized", "amount", "currencyCode",
"merchantReference", "amountCaptured", "amountRefunded"}; <capture> is {"id", "status", "amount", "currencyCode",
"merchantCaptureReference", "isFinal"}; <refund> is {"id", "status", "amount", "currencyCode", "merchantReference"}.
DeclinedRefundException adds "refund": <refund>; IdempotenceException adds "timestamp".
"""
import json
import sys

from worldline.connect.sdk.call_context import CallContext
from worldline.connect.sdk.communicator_configuration import CommunicatorConfiguration
from worldline.connect.sdk.factory import Factory
from worldline.connect.sdk.v1.api_exception import ApiException
from worldline.connect.sdk.v1.declined_payment_exception import DeclinedPaymentException
from worldline.connect.sdk.v1.declined_refund_exception import DeclinedRefundException
from worldline.connect.sdk.v1.idempotence_exception import IdempotenceException
from worldline.connect.sdk.v1.domain.capture_payment_order import CapturePaymentOrder
from worldline.connect.sdk.v1.domain.capture_payment_order_references import CapturePaymentOrderReferences
from worldline.connect.sdk.v1.domain.capture_payment_request import CapturePaymentRequest
from worldline.connect.sdk.v1.domain.refund_references import RefundReferences
from worldline.connect.sdk.v1.domain.refund_request import RefundRequest
from worldline.connect.sdk.v1.domain.amount_of_money import AmountOfMoney
from worldline.connect.sdk.v1.domain.approve_payment_request import ApprovePaymentRequest
from worldline.connect.sdk.v1.domain.card_payment_method_specific_input import CardPaymentMethodSpecificInput
from worldline.connect.sdk.v1.domain.create_payment_request import CreatePaymentRequest
from worldline.connect.sdk.v1.domain.order import Order
from worldline.connect.sdk.v1.domain.order_references import OrderReferences
from worldline.connect.sdk.v1.domain.session_request import SessionRequest
from worldline.connect.sdk.v1.merchant.payments.get_payment_params import GetPaymentParams


def client_for(request):
    configuration = CommunicatorConfiguration(
        api_endpoint=request["endpoint"], api_key_id=request["apiKeyId"], secret_api_key=request["secretApiKey"],
        authorization_type="v1HMAC", integrator="Till interop tests", connect_timeout=5, socket_timeout=10,
        max_connections=2)
    return Factory.create_client_from_configuration(configuration)


def payment_summary(payment):
    if payment is None:
        return None
    output = payment.payment_output
    status_output = payment.status_output
    amount = output.amount_of_money if output is not None else None
    references = output.references if output is not None else None
    return {
        "id": payment.id,
        "status": payment.status,
        "statusCategory": status_output.status_category if status_output is not None else None,
        "statusCode": status_output.status_code if status_output is not None else None,
        "isAuthorized": status_output.is_authorized if status_output is not None else None,
        "amount": amount.amount if amount is not None else None,
        "currencyCode": amount.currency_code if amount is not None else None,
        "merchantReference": references.merchant_reference if references is not None else None,
        "amountCaptured": output.amount_captured if output is not None else None,
        "amountRefunded": output.amount_refunded if output is not None else None,
    }


def capture_summary(capture):
    if capture is None:
        return None
    output = capture.capture_output
    amount = output.amount_of_money if output is not None else None
    references = output.references if output is not None else None
    return {
        "id": capture.id,
        "status": capture.status,
        "amount": amount.amount if amount is not None else None,
        "currencyCode": amount.currency_code if amount is not None else None,
        "merchantCaptureReference": references.merchant_capture_reference if references is not None else None,
        "isFinal": capture.status_output.is_final if capture.status_output is not None else None,
    }


def refund_summary(refund):
    if refund is None:
        return None
    output = refund.refund_output
    amount = output.amount_of_money if output is not None else None
    references = output.references if output is not None else None
    return {
        "id": refund.id,
        "status": refund.status,
        "amount": amount.amount if amount is not None else None,
        "currencyCode": amount.currency_code if amount is not None else None,
        "merchantReference": references.merchant_reference if references is not None else None,
    }


def session(client, request):
    response = client.v1().merchant(request["merchantId"]).sessions().create(SessionRequest())
    return {"ok": True, "session": {
        "clientSessionId": response.client_session_id, "customerId": response.customer_id,
        "clientApiUrl": response.client_api_url, "assetUrl": response.asset_url, "region": response.region,
        "invalidTokens": response.invalid_tokens}}


def pay(client, request):
    body = CreatePaymentRequest()
    body.encrypted_customer_input = request["encryptedCustomerInput"]
    amount = AmountOfMoney()
    amount.amount = request["amount"]
    amount.currency_code = request["currencyCode"]
    references = OrderReferences()
    references.merchant_reference = request["merchantReference"]
    order = Order()
    order.amount_of_money = amount
    order.references = references
    body.order = order
    if request.get("authorizationMode"):
        card = CardPaymentMethodSpecificInput()
        card.authorization_mode = request["authorizationMode"]
        body.card_payment_method_specific_input = card
    merchant = client.with_client_meta_info(request["clientMetaInfo"]).v1().merchant(request["merchantId"])
    created = merchant.payments().create(body, CallContext(idempotence_key=request["idempotenceKey"]))
    fetched = client.v1().merchant(request["merchantId"]).payments().get(created.payment.id, GetPaymentParams())
    action = created.merchant_action.action_type if created.merchant_action is not None else None
    return {"ok": True, "created": payment_summary(created.payment), "merchantAction": action,
            "fetched": payment_summary(fetched)}


def approve(client, request):
    body = ApprovePaymentRequest()
    body.amount = request["amount"]
    response = client.v1().merchant(request["merchantId"]).payments().approve(request["paymentId"], body)
    return {"ok": True, "payment": payment_summary(response.payment)}


def capture(client, request):
    body = CapturePaymentRequest()
    body.amount = request.get("amount")
    body.is_final = request.get("isFinal")
    if request.get("captureReference"):
        references = CapturePaymentOrderReferences()
        references.merchant_capture_reference = request["captureReference"]
        order = CapturePaymentOrder()
        order.references = references
        body.order = order
    merchant = client.v1().merchant(request["merchantId"])
    created = merchant.payments().capture(request["paymentId"], body, CallContext(idempotence_key=request["idempotenceKey"]))
    listed = merchant.payments().captures(request["paymentId"])
    fetched = merchant.captures().get(created.id)
    return {"ok": True, "capture": capture_summary(created), "listed": [capture_summary(c) for c in listed.captures or []],
            "fetched": capture_summary(fetched)}


def refund(client, request):
    body = RefundRequest()
    amount = AmountOfMoney()
    amount.amount = request["amount"]
    amount.currency_code = request["currencyCode"]
    body.amount_of_money = amount
    references = RefundReferences()
    references.merchant_reference = request["merchantReference"]
    body.refund_references = references
    merchant = client.v1().merchant(request["merchantId"])
    context = CallContext(idempotence_key=request["idempotenceKey"])
    created = merchant.payments().refund(request["paymentId"], body, context)
    listed = merchant.payments().refunds(request["paymentId"])
    fetched = merchant.refunds().get(created.id)
    return {"ok": True, "refund": refund_summary(created), "listed": [refund_summary(r) for r in listed.refunds or []],
            "fetched": refund_summary(fetched), "timestamp": context.idempotence_request_timestamp}


def cancel(client, request):
    merchant = client.v1().merchant(request["merchantId"])
    response = merchant.payments().cancel(request["paymentId"], CallContext(idempotence_key=request["idempotenceKey"]))
    return {"ok": True, "payment": payment_summary(response.payment)}


def finalize(client, request):
    payment = client.v1().merchant(request["merchantId"]).payments().finalizecapture(request["paymentId"])
    return {"ok": True, "payment": payment_summary(payment)}


def models(client, request):
    classes = {"CapturePaymentRequest": CapturePaymentRequest, "ApprovePaymentRequest": ApprovePaymentRequest,
               "RefundRequest": RefundRequest}
    result = []
    for item in request["models"]:
        model = classes[item["model"]]().from_dictionary(item["body"])
        result.append(model.to_dictionary())
    return {"ok": True, "models": result}


def main():
    command = sys.argv[1]
    request = json.load(sys.stdin)
    handler = {"session": session, "pay": pay, "approve": approve, "capture": capture, "refund": refund, "cancel": cancel,
               "finalize": finalize, "models": models}[command]
    client = client_for(request)
    try:
        answer = handler(client, request)
    except DeclinedPaymentException as error:
        result = error.create_payment_result
        answer = {"ok": False, "exception": type(error).__name__, "statusCode": error.status_code,
                  "errorId": error.error_id,
                  "errors": [{"code": e.code, "message": e.message, "propertyName": e.property_name} for e in error.errors or []],
                  "payment": payment_summary(result.payment if result is not None else None)}
    except DeclinedRefundException as error:
        answer = {"ok": False, "exception": type(error).__name__, "statusCode": error.status_code,
                  "errorId": error.error_id,
                  "errors": [{"code": e.code, "message": e.message, "propertyName": e.property_name} for e in error.errors or []],
                  "refund": refund_summary(error.refund_result)}
    except IdempotenceException as error:
        answer = {"ok": False, "exception": type(error).__name__, "statusCode": error.status_code,
                  "errorId": error.error_id, "timestamp": error.idempotence_request_timestamp,
                  "errors": [{"code": e.code, "message": e.message, "propertyName": e.property_name} for e in error.errors or []]}
    except ApiException as error:
        answer = {"ok": False, "exception": type(error).__name__, "statusCode": error.status_code,
                  "errorId": error.error_id,
                  "errors": [{"code": e.code, "message": e.message, "propertyName": e.property_name} for e in error.errors or []]}
    finally:
        client.close()
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()
