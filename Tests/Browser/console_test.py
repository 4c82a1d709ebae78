"""The operator console in a real headless Chromium, as an operator and an attacker use it.

Run by Tests/TillServerTests/QuickstartTests.swift after the quick start's payments, against its `till server`:
sign in (a wrong token first), search, open the card payment, read its timeline (attempt, gateway exchanges, notification, inquiry),
redeliver an event through the confirmation page and see it audited; a payment whose description and metadata carry
markup shows them as text and runs nothing; a form posted from another origin in the same browser, with the
operator signed in, changes nothing; sign out. Screenshots of each page go to $TILL_CONSOLE_SCREENSHOTS when set.

Environment: CONSOLE_URL, CONSOLE_TOKEN, API_URL, API_KEY, MERCHANT; CHROMIUM and CHROMEDRIVER (default: Debian's).
Prints one line per check; exits 1 when any failed.
"""

import http.server
import json
import os
import sys
import threading
import time
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import Select, WebDriverWait

CONSOLE = os.environ["CONSOLE_URL"].rstrip("/")
TOKEN = os.environ["CONSOLE_TOKEN"]
API = os.environ["API_URL"].rstrip("/")
API_KEY = os.environ["API_KEY"]
MERCHANT = os.environ["MERCHANT"]
SHOTS = os.environ.get("TILL_CONSOLE_SCREENSHOTS")
MARKUP = "<script>alert('xss')</script><img src=x onerror=alert(1)>"

failures = []


def check(condition, what):
    print(("ok    " if condition else "FAIL  ") + what, flush=True)
    if not condition:
        failures.append(what)


def api_create(body):
    request = urllib.request.Request(API + "/v1/payments", data=json.dumps(body).encode(), method="POST",
                                     headers={"Authorization": "Bearer " + API_KEY, "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.load(answer)


options = webdriver.ChromeOptions()
options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900",
                 "--force-device-scale-factor=1", "--hide-scrollbars"]:
    options.add_argument(argument)
driver = webdriver.Chrome(service=Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")), options=options)
driver.set_page_load_timeout(30)


def shot(name):
    """The whole page, not just the window."""
    if not SHOTS:
        return
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1280, max(600, min(height + 20, 6000)))
    driver.save_screenshot(os.path.join(SHOTS, name + ".png"))
    driver.set_window_size(1280, 900)


def click_and_wait(element):
    """Clicks a link or a form's button and waits until the next page has replaced this one."""
    page = driver.find_element(By.TAG_NAME, "html")
    element.click()
    WebDriverWait(driver, 15).until(expected_conditions.staleness_of(page))


def alert_open():
    try:
        driver.switch_to.alert
        return True
    except NoAlertPresentException:
        return False


def timeline_kinds():
    return [item.get_attribute("class") for item in driver.find_elements(By.CSS_SELECTOR, "ol.timeline li")]


def audit_count():
    driver.get(CONSOLE + "/audit")
    return len(driver.find_elements(By.CSS_SELECTOR, "main table tbody tr"))


try:
    # Nobody signed in: every page sends to the sign-in form.
    driver.get(CONSOLE + "/payments")
    check(driver.current_url == CONSOLE + "/login", "a page without a session goes to /login")
    shot("login")
    driver.find_element(By.NAME, "token").send_keys("not-the-operator-token-0000000000000000")
    click_and_wait(driver.find_element(By.CSS_SELECTOR, "form.login button"))
    check("not an operator" in driver.page_source and driver.get_cookie("till_console") is None, "a wrong token is refused, no cookie")
    driver.find_element(By.NAME, "token").send_keys(TOKEN)
    click_and_wait(driver.find_element(By.CSS_SELECTOR, "form.login button"))
    check(driver.current_url.startswith(CONSOLE + "/payments"), "the operator's token signs in")
    cookie = driver.get_cookie("till_console") or {}
    check(cookie.get("httpOnly") is True and cookie.get("sameSite") == "Strict", "the session cookie is HttpOnly and SameSite=Strict")

    # Search: the quick start's PayFort payments that are paid, newest first; open the oldest (the 3-D Secure card).
    Select(driver.find_element(By.NAME, "status")).select_by_value("paid")
    Select(driver.find_element(By.NAME, "gateway")).select_by_value("payfort")
    click_and_wait(driver.find_element(By.CSS_SELECTOR, "form.filters button[type=submit]"))
    rows = driver.find_elements(By.CSS_SELECTOR, "table.results tbody tr")
    check(len(rows) >= 1 and all("payfort" in row.text and "paid" in row.text for row in rows), f"search finds paid PayFort payments ({len(rows)})")
    shot("payments")
    links = driver.find_elements(By.CSS_SELECTOR, "table.results a.payment")
    click_and_wait(links[-1])
    kinds = timeline_kinds()
    check(driver.find_element(By.TAG_NAME, "h1").text.startswith("Payment pay_"), "the payment's page opens")
    for kind in ["k-payment", "k-attempt", "k-exchange", "k-notification", "k-inquiry", "k-event"]:
        check(kind in kinds, f"its timeline shows {kind[2:]}")
    verdicts = [badge.text for badge in driver.find_elements(By.CSS_SELECTOR, "ol.timeline li.k-notification .badge")]
    # PayFort's feedback is applied only once the server's CHECK_STATUS confirms it: its verdict is needs_inquiry, and
    # the inquiry that confirmed it is beside it.
    check(bool(verdicts) and set(verdicts) <= {"applied", "duplicate", "needs_inquiry", "stale"}, f"the notification's verdict is shown ({verdicts})")
    payment_url = driver.current_url
    shot("payment")

    # An action: redeliver the payment's first event, confirmed, then audited in the timeline and the audit page.
    before = audit_count()
    driver.get(payment_url)
    click_and_wait(driver.find_element(By.LINK_TEXT, "Redeliver"))
    check("/confirm?" in driver.current_url and "pending again" in driver.page_source, "redeliver asks to confirm first")
    shot("confirm")
    click_and_wait(driver.find_element(By.CSS_SELECTOR, "form.confirm button[type=submit]"))
    check(driver.current_url == payment_url, "after confirming, back on the payment")
    audited = [item.text for item in driver.find_elements(By.CSS_SELECTOR, "ol.timeline li.k-audit")]
    check(any("redeliver" in text and "ok" in text for text in audited), f"the action is in the timeline ({audited})")
    check(audit_count() == before + 2, "and on the audit page (requested, then ok)")
    shot("audit")

    # Markup a merchant or customer wrote is text: nothing runs, no element is made of it.
    created = api_create({"merchantReference": f"xss-{int(time.time())}", "amount": {"value": 1500, "currency": "USD"}, "country": "US",
                          "method": "wechatpay", "description": MARKUP, "metadata": {"note": MARKUP}})
    driver.get(CONSOLE + "/payments")
    driver.find_element(By.NAME, "merchantReference").send_keys(created["merchantReference"])
    click_and_wait(driver.find_element(By.CSS_SELECTOR, "form.filters button[type=submit]"))
    click_and_wait(driver.find_element(By.CSS_SELECTOR, "table.results a.payment"))
    time.sleep(0.5)
    check(not alert_open(), "no script from a payment's description ran")
    shown = [element.text for element in driver.find_elements(By.CSS_SELECTOR, "section.summary dd")]
    check(MARKUP in shown, "the description and metadata show as the text they are")
    check(not driver.find_elements(By.CSS_SELECTOR, "main script, main img"), "no element was made of them")

    # Cross-site request forgery: a page on another origin posts an inquiry form into the console while the operator
    # is signed in. The browser sends the cookie (same site, other port); the console refuses and writes nothing.
    before = audit_count()
    target = driver.current_url
    forged = f"""<!doctype html><form id=f method=post action="{CONSOLE}/actions">
        <input name=action value=redeliver><input name=merchant value="{MERCHANT}"><input name=payment value="{created['id']}">
        <input name=target value="{created['id']}"></form><script>document.getElementById('f').submit()</script>"""

    class Attacker(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(forged.encode())

        def log_message(self, *args):
            pass

    attacker = http.server.HTTPServer(("127.0.0.1", 0), Attacker)
    threading.Thread(target=attacker.serve_forever, daemon=True).start()
    driver.get(f"http://127.0.0.1:{attacker.server_address[1]}/")
    time.sleep(1.5)
    check("Refused" in driver.page_source, "a form posted from another origin is refused")
    attacker.shutdown()
    check(audit_count() == before, "and nothing was done or audited")

    for page in ["gateways", "reconciliation", "quarantine"]:
        driver.get(f"{CONSOLE}/{page}")
        check(driver.find_element(By.TAG_NAME, "h1").text.lower() == page, f"the {page} page opens")
        shot(page)

    # Signing out ends the session.
    driver.get(CONSOLE + "/payments")
    click_and_wait(driver.find_element(By.CSS_SELECTOR, "form.signout button"))
    driver.get(CONSOLE + "/payments")
    check(driver.current_url == CONSOLE + "/login", "after signing out, pages ask to sign in again")
except Exception as error:  # a missing element or a timeout is a failed check, with the page it happened on
    failures.append(f"{type(error).__name__}: {error}".splitlines()[0])
    print(f"FAIL  {failures[-1]} on {driver.current_url}", flush=True)
    print(driver.page_source[:1500], flush=True)
finally:
    driver.quit()

print(json.dumps({"checks_failed": len(failures), "failures": failures}))
sys.exit(1 if failures else 0)
